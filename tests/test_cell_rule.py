"""A kernel module's `cell_problem` judges each cell at validate: gemm's numpy backend with
a bf16 cell is one line at the variant, not a run whose every cell fails."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernbench.commands.validate import load_and_check
from kernbench.errors import SpecError
from kernbench.kernels import gemm

NUMPY_BF16 = """\
    name: b
    description: d
    kernel: gemm
    axes:
      shape: [{M: 64, N: 64, K: 64}]
    dtypes: [fp32, bf16]
    variants:
      cpu: {backend: numpy}
    """


def error_of(folder: Path, text: str) -> str:
    path = folder / "bench.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(SpecError) as info:
        load_and_check(path)
    return str(info.value).removeprefix(f"{path}:")


def test_numpy_with_bf16_is_refused_at_the_variant(tmp_path: Path) -> None:
    assert error_of(tmp_path, NUMPY_BF16) == (
        "8: variants.cpu: gemm: backend numpy multiplies fp32 and fp64 only, not 'bf16' "
        "(cell cpu/shape=64x64x64,dtype=bf16)"
    )


def test_without_variants_the_default_backend_is_refused_at_the_kernel(tmp_path: Path) -> None:
    text = NUMPY_BF16.replace("variants:\n      cpu: {backend: numpy}\n", "")
    assert error_of(tmp_path, text) == (
        "3: kernel: gemm: backend numpy multiplies fp32 and fp64 only, not 'bf16' "
        "(cell default/shape=64x64x64,dtype=bf16)"
    )


def test_cells_excluded_on_every_device_are_not_judged(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(textwrap.dedent(NUMPY_BF16) + textwrap.dedent("""\
        exclude:
          - {device: cpu, dtype: bf16}
          - {device: cuda, variant: cpu}
        """))
    assert load_and_check(path).name == "b"


def test_the_factory_refuses_by_the_same_rule() -> None:
    with pytest.raises(ValueError) as info:
        gemm.make(M=8, N=8, K=8, dtype="bf16")
    assert str(info.value) == "backend numpy multiplies fp32 and fp64 only, not 'bf16'"


def test_a_cell_rule_that_raises_is_one_line_at_the_variant(tmp_path: Path) -> None:
    (tmp_path / "raising_cell_rule_kb.py").write_text(
        "def cell_problem(params):\n"
        "    return params['missing']\n"
        "def make(n, device):\n"
        "    return lambda: None\n"
    )
    text = ("name: b\ndescription: d\nkernel: raising_cell_rule_kb:make\naxes:\n  n: [1]\n"
            "variants:\n  v: {}\n")
    assert error_of(tmp_path, text) == (
        "7: variants.v: raising_cell_rule_kb:make: cell_problem raised KeyError: 'missing' "
        "(raising_cell_rule_kb.py:2, in cell_problem) (cell v/n=1)"
    )
