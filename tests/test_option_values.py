"""The values a bench passes to its kernel are checked against the factory's annotations
before anything is measured: a misspelled choice is a one-line error, not a cell measured
with something else (ADR 0065)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_variant_options import error_of

from kernbench.kernels import gemm
from kernbench.spec.loader import load_bench

TYPED = """\
    from typing import Literal

    def make(*, work_us: int, mode: Literal["fast", "exact"] = "fast", scale: float = 1.0,
             device: str = "cpu"):
        return lambda: None
    """


def bench(options: str, axis: str = "[50]") -> str:
    return (
        "name: b\ndescription: d\nkernel: typed_kb:make\n"
        f"axes:\n  work_us: {axis}\nvariants:\n  v: {options}\n"
    )


def test_a_choice_the_annotation_does_not_name(tmp_path: Path) -> None:
    assert error_of(tmp_path, bench("{mode: fsat}"), TYPED, "typed_kb") == (
        "7: variants.v.mode: typed_kb:make's mode: Input should be 'fast' or 'exact' "
        "(got 'fsat')"
    )


@pytest.mark.parametrize(
    ("options", "axis", "line", "field", "got"),
    [
        ("{scale: fast}", "[50]", 7, "variants.v.scale", "'fast'"),
        ("{}", "[50, '64']", 5, "axes.work_us.1", "'64'"),
        ("{}", "[50, true]", 5, "axes.work_us.1", "True"),
        ("{}", "[50.5]", 5, "axes.work_us.0", "50.5"),
    ],
)
def test_values_are_checked_strictly(
    tmp_path: Path, options: str, axis: str, line: int, field: str, got: str
) -> None:
    message = error_of(tmp_path, bench(options, axis), TYPED, "typed_kb")
    assert message.startswith(f"{line}: {field}: typed_kb:make's ")
    assert message.endswith(f"(got {got})")


def test_values_the_annotations_admit(tmp_path: Path) -> None:
    (tmp_path / "typed_kb.py").write_text(TYPED.replace("\n    ", "\n").lstrip())
    path = tmp_path / "bench.yaml"
    path.write_text(bench("{mode: exact, scale: 2}"))  # an int is a float
    assert load_bench(path).variants == {"v": {"mode": "exact", "scale": 2}}


@pytest.mark.parametrize(
    "module",
    [
        "from __future__ import annotations\n\n"
        "def make(work_us: NotDefinedAnywhere, device='cpu'):\n    return 1\n",
        "class Tensor: ...\n\ndef make(work_us: Tensor, device='cpu'):\n    return 1\n",
        "def make(work_us, device='cpu'):\n    return 1\n",
    ],
    ids=["unresolved", "not-checkable", "unannotated"],
)
def test_an_annotation_that_cannot_be_checked_is_skipped(tmp_path: Path, module: str) -> None:
    name = f"odd{len(module)}_kb"  # a module of its own per case: imports are cached
    (tmp_path / f"{name}.py").write_text(module)
    path = tmp_path / "bench.yaml"
    path.write_text(f"name: b\ndescription: d\nkernel: {name}:make\naxes:\n  work_us: [x]\n")
    assert load_bench(path).axes == {"work_us": ["x"]}


def test_the_gemm_backends_and_stagings_are_named(tmp_path: Path) -> None:
    head = "name: b\ndescription: d\nkernel: gemm\naxes:\n  shape: [{M: 8, N: 8, K: 8}]\n"
    assert error_of(tmp_path, head + "variants:\n  v: {backend: numpyy}\n") == (
        "7: variants.v.backend: gemm's backend: Input should be 'numpy', 'torch' or 'triton' "
        "(got 'numpyy')"
    )
    assert error_of(tmp_path, head + "variants:\n  v: {staging: stagd}\n").startswith(
        "7: variants.v.staging: gemm's staging: Input should be 'resident' or 'staged'"
    )
    mapping = head.replace("M: 8,", "M: 8.5,") + "variants:\n  v: {backend: numpy}\n"
    assert error_of(tmp_path, mapping).startswith("5: axes.shape.0.M: gemm's M: ")


def test_the_collective_ops_are_named(tmp_path: Path) -> None:
    text = "name: b\ndescription: d\nkernel: collective\naxes:\n  op: [allreduce, all_gather]\n"
    assert error_of(tmp_path, text + "  bytes: [1024]\n") == (
        "5: axes.op.1: collective's op: Input should be 'allreduce', 'allgather' or "
        "'reduce_scatter' (got 'all_gather')"
    )


def test_a_gemm_option_its_backend_does_not_read_is_an_error_at_its_variant(
    tmp_path: Path,
) -> None:
    head = "name: b\ndescription: d\nkernel: gemm\naxes:\n  shape: [{M: 8, N: 8, K: 8}]\n"
    text = head + "variants:\n  ok: {backend: torch, host: pinned}\n  bad: {host: pinned}\n"
    assert load_bench_text(tmp_path, text).variants["bad"] == {"host": "pinned"}  # no backend
    text += "  worse: {backend: numpy, host: pinned}\n"
    assert error_of(tmp_path, text) == (
        "9: variants.worse: gemm: backend numpy does not read host (it reads staging, autotune)"
    )


def test_a_factory_modules_own_options_rule_is_asked_of_each_variant(tmp_path: Path) -> None:
    module = TYPED + (
        "\n    def options_problem(options):\n"
        "        if options.get('mode') == 'exact' and options.get('scale', 1.0) != 1.0:\n"
        "            return 'exact mode takes no scale'\n"
        "        return None\n"
    )
    text = bench("{mode: exact}").replace("typed_kb", "rule_kb")
    text += "  scaled: {mode: exact, scale: 2.0}\n"
    assert error_of(tmp_path, text, module, "rule_kb") == (
        "8: variants.scaled: rule_kb:make: exact mode takes no scale")


def test_an_options_rule_that_raises_is_one_line_at_the_variant(tmp_path: Path) -> None:
    module = TYPED + "\n    def options_problem(options):\n        return options['mode'] + 1\n"
    text = bench("{mode: exact}").replace("typed_kb", "raising_rule_kb")
    assert error_of(tmp_path, text, module, "raising_rule_kb") == (
        "7: variants.v: raising_rule_kb:make: options_problem raised TypeError: can only "
        'concatenate str (not "int") to str (raising_rule_kb.py:8, in options_problem)')


def load_bench_text(folder: Path, text: str):
    path = folder / "bench.yaml"
    path.write_text(text)
    return load_bench(path)


def test_a_gemm_option_its_backend_does_not_read_is_refused_when_the_kernel_is_made() -> None:
    with pytest.raises(ValueError, match=r"backend numpy does not read host \(it reads"):
        gemm.make(M=8, N=8, K=8, backend="numpy", host="pinned")
    with pytest.raises(ValueError, match="backend triton does not read staging"):
        gemm.make(M=8, N=8, K=8, backend="triton", device="cuda", staging="staged")
    kernel = gemm.make(M=8, N=8, K=8, backend="numpy", staging="resident", autotune=False)
    assert kernel.info == {"implementation": "numpy.matmul"}


@pytest.mark.parametrize(("value", "got"), [("0", "0"), ("-8", "-8")])
def test_a_gemm_dimension_under_one_is_refused_at_its_value(
    tmp_path: Path, value: str, got: str
) -> None:
    text = f"name: b\ndescription: d\nkernel: gemm\naxes:\n  shape: [{{M: {value}, N: 8, K: 8}}]\n"
    assert error_of(tmp_path, text) == (
        f"5: axes.shape.0.M: gemm's M: Input should be greater than 0 (got {got})"
    )


def test_a_parameter_the_factory_needs_must_reach_every_cell(tmp_path: Path) -> None:
    head = "name: b\ndescription: d\nkernel: gemm\naxes:\n  shape:\n"
    text = head + "    - {M: 8, N: 8, K: 8}\n    - {M: 8, N: 8}\n"
    assert error_of(tmp_path, text) == (
        "7: axes.shape.1: gemm needs 'K', which this value does not set"
    )
    text = "name: b\ndescription: d\nkernel: gemm\naxes:\n  M: [8]\n  N: [8]\n"
    assert error_of(tmp_path, text) == "3: kernel: gemm needs 'K', but no axis or variant sets it"
    text += "variants:\n  small: {K: 8}\n  other: {}\n"
    assert error_of(tmp_path, text) == (
        "9: variants.other: gemm needs 'K': neither this variant nor an axis sets it"
    )
    assert load_bench_text(tmp_path, text.replace("other: {}", "big: {K: 16}")).variants


def test_a_misspelled_or_negative_sleep_option_is_refused(tmp_path: Path) -> None:
    head = "name: b\ndescription: d\nkernel: sleep\naxes:\n  size: [1, 2]\n"
    assert error_of(tmp_path, head + "variants:\n  v: {wrk_us: 5}\n") == (
        "7: variants.v: sleep: no option 'wrk_us'; a variant sets only work_us, switch, "
        "effect_pct, fail_round, scale"
    )
    assert error_of(tmp_path, head + "variants:\n  v: {work_us: -5}\n") == (
        "7: variants.v.work_us: sleep's work_us: Input should be greater than 0 (got -5)"
    )
    assert load_bench_text(tmp_path, head + "variants:\n  v: {work_us: 5}\n").variants
