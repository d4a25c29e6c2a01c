"""Variant options that would hide an axis, and keywords the kernel factory does not take,
are errors with their line (issue 12 item 5, issue 14)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernbench.errors import SpecError
from kernbench.spec.loader import load_bench


def error_of(
    folder: Path, text: str, module: str | None = None, module_name: str = "strictmod_kb"
) -> str:
    if module is not None:
        (folder / f"{module_name}.py").write_text(textwrap.dedent(module))
    path = folder / "bench.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(SpecError) as info:
        load_bench(path)
    return str(info.value).removeprefix(f"{path}:")


def test_an_option_named_like_an_axis(tmp_path: Path) -> None:
    text = """\
        name: b
        description: d
        kernel: sleep
        axes:
          work_us: [50, 100]
        variants:
          fixed: {work_us: 10}
        """
    assert error_of(tmp_path, text) == (
        "7: variants.fixed.work_us: 'work_us' is an axis; a variant option cannot override it"
    )


def test_an_option_named_like_a_key_of_a_mapping_axis(tmp_path: Path) -> None:
    text = """\
        name: b
        description: d
        kernel: gemm
        axes:
          shape: [{M: 64, N: 64, K: 64}]
        variants:
          plain: {backend: numpy}
          square:
            backend: numpy
            M: 128
        """
    assert error_of(tmp_path, text) == (
        "10: variants.square.M: 'M' is set by the axis 'shape'; a variant option cannot "
        "override it"
    )


def test_an_option_named_like_the_dtypes_or_device(tmp_path: Path) -> None:
    head = "name: b\ndescription: d\nkernel: sleep\ndtypes: [fp32]\n"
    assert error_of(tmp_path, head + "variants:\n  v: {dtype: bf16}\n") == (
        "6: variants.v.dtype: 'dtype' is an axis; a variant option cannot override it"
    )
    assert error_of(tmp_path, head + "variants:\n  v: {device: cuda}\n") == (
        "6: variants.v.device: 'device' is set by the run (--device); a variant cannot set it"
    )


FACTORY = """\
    def make(*, work_us, chunks=1, device="cpu"):
        return lambda: None
    """


def test_an_option_the_factory_does_not_take(tmp_path: Path) -> None:
    text = """\
        name: b
        description: d
        kernel: strictmod_kb:make
        axes:
          work_us: [50]
        variants:
          plain: {}
          typo: {chunkz: 2}
        """
    assert error_of(tmp_path, text, FACTORY) == (
        "8: variants.typo.chunkz: 'chunkz' is passed to every cell's kernel, but "
        "strictmod_kb:make takes chunks, device, work_us"
    )


def test_an_axis_or_device_the_factory_does_not_take(tmp_path: Path) -> None:
    text = """\
        name: b
        description: d
        kernel: strictmod_kb:make
        axes:
          work_us: [50]
          size: [1]
        """
    assert error_of(tmp_path, text, FACTORY) == (
        "6: axes.size: 'size' is passed to every cell's kernel, but "
        "strictmod_kb:make takes chunks, device, work_us"
    )
    module = "def make(work_us):\n    return lambda: None\n"
    text = "name: b\ndescription: d\nkernel: nodevice_kb:make\naxes:\n  work_us: [50]\n"
    assert error_of(tmp_path, text, module, "nodevice_kb") == (
        "3: kernel: 'device' is passed to every cell's kernel (the device it runs on: "
        "'cpu' or 'cuda'; take device, or **_), but nodevice_kb:make takes work_us"
    )


def test_a_factory_without_dtype_is_told_where_dtype_comes_from(tmp_path: Path) -> None:
    # `dtypes: [fp32]` arrives as `dtype`, a keyword the YAML never spells.
    module = "def make(n, device):\n    return lambda: None\n"
    text = "name: b\ndescription: d\nkernel: nodtype_kb:make\naxes:\n  n: [1]\n" \
        "dtypes: [fp32]\n"
    assert error_of(tmp_path, text, module, "nodtype_kb") == (
        "6: dtypes: 'dtype' is passed to every cell's kernel (one of dtypes: per cell), but "
        "nodtype_kb:make takes device, n"
    )


def test_a_factory_with_kwargs_takes_any_option(tmp_path: Path) -> None:
    (tmp_path / "loosemod_kb.py").write_text("def make(work_us, **options):\n    return 1\n")
    path = tmp_path / "bench.yaml"
    path.write_text(
        "name: b\ndescription: d\nkernel: loosemod_kb:make\naxes:\n  work_us: [50]\n"
        "variants:\n  v: {anything: 1}\n"
    )
    assert load_bench(path).variants == {"v": {"anything": 1}}


def test_a_built_in_factory_is_checked_too(tmp_path: Path) -> None:
    text = """\
        name: b
        description: d
        kernel: collective
        axes:
          op: [all_reduce]
          bytes: [1024]
        variants:
          v: {in_place: true}
        """
    assert error_of(tmp_path, text) == (
        "8: variants.v.in_place: 'in_place' is passed to every cell's kernel, but collective "
        "takes api, bytes, device, dtype, inplace, op, world_size"
    )
