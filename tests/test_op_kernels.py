"""The torch side of op benches: tensors per init kind, the check, and the backends
(eager, torch.compile on the CPU, and FlagGems where it is missing)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernbench.kernels import backends
from kernbench.kernels.backends import BackendUnavailable
from kernbench.kernels.base import CorrectnessError
from kernbench.kernels.compare import compare
from kernbench.kernels.tensors import Init, TensorPlan, make_tensor
from kernbench.spec.loader import load_bench
from kernbench.spec.op_factory import OpFactory, bench_factory
from kernbench.spec.op_inits import cell_init

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("init", "dtype", "expected"),
    [
        ("randn", "bf16", torch.bfloat16),
        ("rand", "fp16", torch.float16),
        ("zeros", "fp32", torch.float32),
        ("ones", "int32", torch.int32),
        ("randint(0, 8)", "int64", torch.int64),
        ("bernoulli(0.25)", "bool", torch.bool),
        ("randn", "fp8", torch.float8_e4m3fn),
    ],
)
def test_each_init_makes_its_dtype_and_shape(init: str, dtype: str, expected: object) -> None:
    tensor = make_tensor(TensorPlan((3, 5), dtype, cell_init(init, {})), "cpu")
    assert tensor.dtype == expected and tuple(tensor.shape) == (3, 5)


def test_init_values() -> None:
    assert bool((make_tensor(TensorPlan((4,), "fp32", Init("zeros")), "cpu") == 0).all())
    assert bool((make_tensor(TensorPlan((4,), "fp32", Init("ones")), "cpu") == 1).all())
    ints = make_tensor(TensorPlan((1000,), "int64", cell_init("randint(2, 5)", {})), "cpu")
    assert ints.min() >= 2 and ints.max() < 5
    uniform = make_tensor(TensorPlan((1000,), "fp32", Init("rand")), "cpu")
    assert uniform.min() >= 0 and uniform.max() < 1
    mask = make_tensor(TensorPlan((10000,), "bool", cell_init("bernoulli(0.25)", {})), "cpu")
    assert 0.2 < mask.float().mean() < 0.3
    assert make_tensor(TensorPlan((), "fp32", Init("randn")), "cpu").shape == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bernoulli(2)", "needs 0 <= p <= 1"),
        ("randint(5, 1)", "needs low < high"),
        ("randint(0.5, 3)", "needs whole numbers"),  # was drawn from 0 silently
        ("randn(1)", "randn takes 0 arguments"),
        ("randint(0, n)", "unknown name 'n'"),  # a cell without the parameter
        ("os.system", "cannot read init"),
    ],
)
def test_bad_inits(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        cell_init(text, {})


def test_compare_tuples_by_name_and_exactly() -> None:
    x = torch.randn(4, 16)
    ours, reference = torch.topk(x, 3), torch.topk(x.double(), 3)
    assert compare(ours, reference, ["values"], False, 1e-4).ok
    # indices compared too: equal here, since the values have no ties
    assert compare(ours, reference, [], False, 1e-4).rel_err < 1e-6
    assert compare(ours.values, ours.values.clone(), [], True, 0.0).ok
    wrong = compare(ours.values, ours.values + 1, [], True, 0.0)
    assert not wrong.ok and math.isinf(wrong.rel_err)
    with pytest.raises(CorrectnessError, match="shape"):
        compare(x[:2], x, [], False, 1e-4)
    with pytest.raises(CorrectnessError, match="no output 'weights'"):
        compare(ours, reference, ["weights"], False, 1e-4)


def test_a_nan_in_any_output_fails_the_check() -> None:
    # The worst error over outputs is a max, which would drop a NaN error as if it were 0.
    reference = (torch.ones(4), torch.ones(4))
    ours = (torch.ones(4), torch.tensor([1.0, float("nan"), 1.0, 1.0]))
    result = compare(ours, reference, [], False, 1e-4)
    assert not result.ok and math.isinf(result.rel_err)


def bench_file(tmp_path: Path, backend: str, extra: str = "") -> Path:
    path = tmp_path / "b.yaml"
    path.write_text(
        "name: b\nop: torch.topk\naxes: {rows: [4], cols: [32]}\ndtypes: [fp32]\n"
        "inputs: {input: {shape: [rows, cols]}}\nargs: {k: 3}\n"
        f"variants: {{v: {{backend: {backend}}}}}\n" + extra
    )
    return path


def test_a_cell_gets_fresh_inputs_and_a_passing_check(tmp_path: Path) -> None:
    bench = load_bench(bench_file(tmp_path, "torch", "check: {ref: torch.topk, outputs: [0]}\n"))
    factory = bench_factory(bench, tmp_path)
    assert isinstance(factory, OpFactory)
    kernel = factory(rows=4, cols=32, dtype="fp32", backend="torch", device="cpu")
    assert kernel.check is not None and kernel.check().ok
    values, _ = kernel.run()
    assert tuple(values.shape) == (4, 3)
    assert kernel.info == {"op": "torch.topk", "backend": "torch"}


def test_a_wrong_reference_fails_the_check(tmp_path: Path) -> None:
    extra = "check: {ref: torch.kthvalue, outputs: [values]}\n"
    bench = load_bench(bench_file(tmp_path, "torch", extra))
    kernel = OpFactory(bench)(rows=4, cols=32, dtype="fp32", backend="torch", device="cpu")
    assert kernel.check is not None
    with pytest.raises(CorrectnessError, match="shape"):
        kernel.check()


@pytest.mark.slow
# torch.compile's first use imports torch.jit, which warns of its own deprecation
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_compile_backend_compiles_while_preparing(tmp_path: Path) -> None:
    bench = load_bench(bench_file(tmp_path, "compile", "check: {ref: torch.topk, outputs: [0]}"))
    kernel = OpFactory(bench)(rows=4, cols=32, dtype="fp32", backend="compile", device="cpu")
    assert kernel.check is not None and kernel.check().ok
    assert kernel.info["backend"] == "compile"
    # A second shape in the same process compiles on its own, not on the first's cache.
    other = OpFactory(bench)(rows=8, cols=64, dtype="fp32", backend="compile", device="cpu")
    values, _ = other.run()
    assert tuple(values.shape) == (8, 3)


def test_flag_gems_missing_fails_the_cell_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "flag_gems", None)
    bench = load_bench(bench_file(tmp_path, "flag_gems"))
    with pytest.raises(BackendUnavailable, match="backend flag_gems: cannot import flag_gems"):
        OpFactory(bench)(rows=4, cols=32, dtype="fp32", backend="flag_gems", device="cpu")


@dataclass
class GemsLog:
    events: list[str] = field(default_factory=list)  # "in" / "out" of use_gems()


@pytest.fixture
def gems_scopes(monkeypatch: pytest.MonkeyPatch) -> GemsLog:
    """A stand-in flag_gems whose use_gems() scope logs its entries and exits."""
    log = GemsLog()

    class Scope:
        def __enter__(self) -> None:
            log.events.append("in")

        def __exit__(self, *exc: object) -> None:
            log.events.append("out")

    fake = type(sys)("flag_gems")
    fake.use_gems = Scope  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flag_gems", fake)
    return log


def test_a_torch_cell_is_refused_while_a_gems_scope_is_open(
    tmp_path: Path, gems_scopes: GemsLog
) -> None:
    entered = gems_scopes.events
    bench = load_bench(bench_file(tmp_path, "flag_gems"))
    params = {"rows": 4, "cols": 32, "dtype": "fp32", "device": "cpu"}
    first = OpFactory(bench)(backend="flag_gems", **params)
    second = OpFactory(bench)(backend="flag_gems", **params)
    # one scope for the cells held together (left while the second's inputs were made)
    assert entered == ["in", "out", "in"]
    with pytest.raises(BackendUnavailable, match="holds FlagGems' scope open"):
        OpFactory(bench)(backend="torch", **params)
    assert first.close is not None and second.close is not None
    first.close()
    assert entered[-1] == "in"  # the second cell still holds it
    second.close()
    assert entered[-1] == "out"
    OpFactory(bench)(backend="torch", **params)  # the scope is closed: torch cells again


def test_flag_gems_tunes_into_a_private_database(tmp_path: Path) -> None:
    # Its on-disk database would hand a later process earlier choices, past the pins; it is
    # read when flag_gems is imported, which an op path may do before any cell is prepared.
    code = (
        "import os; from kernbench.kernels import backends; "
        "print(os.environ['FLAGGEMS_DB_URL'])"
    )
    env = {**os.environ, "FLAGGEMS_DB_URL": f"sqlite:///{tmp_path}/shared.db"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "sqlite://", done.stderr


def test_kernbenchs_own_work_nested_leaves_the_scope_once(gems_scopes: GemsLog) -> None:
    opened = backends.prepare("flag_gems", lambda: None)
    assert backends.operators_replaced()
    with backends.outside_scope():
        assert not backends.operators_replaced()
        with backends.outside_scope():
            pass
    assert gems_scopes.events == ["in", "out", "in"]
    assert opened.close is not None
    opened.close()
    assert gems_scopes.events == ["in", "out", "in", "out"] and not backends.operators_replaced()


def test_the_inputs_and_the_check_run_outside_an_open_gems_scope(
    tmp_path: Path, gems_scopes: GemsLog
) -> None:
    # FlagGems' kernels refuse float64 and empty tensors: kernbench's own torch work (a
    # cell's inputs, the check's float64 reference) must not run under its scope.
    events = gems_scopes.events
    bench = load_bench(bench_file(tmp_path, "flag_gems", "check: {ref: torch.topk, outputs: [0]}"))
    params = {"rows": 4, "cols": 32, "dtype": "fp32", "device": "cpu"}
    first = OpFactory(bench)(backend="flag_gems", **params)
    assert events == ["in"]  # the first cell's inputs were made before its scope opened
    second = OpFactory(bench)(backend="flag_gems", **params)
    assert events == ["in", "out", "in"]  # the second's made with the scope left
    assert second.check is not None and second.check().ok
    assert events == ["in", "out", "in", "out", "in"]  # the op in it, the reference not
    assert first.close is not None and second.close is not None
    first.close()
    second.close()
    assert events[-1] == "out"


def test_normal_init_scales_randn() -> None:
    import torch

    torch.manual_seed(0)
    weights = make_tensor(
        TensorPlan((100_000,), "fp32", cell_init("normal(1, 0.01)", {})), "cpu")
    assert abs(float(weights.mean()) - 1.0) < 1e-3 and abs(float(weights.std()) - 0.01) < 1e-3
    with pytest.raises(ValueError, match="std > 0"):
        cell_init("normal(0, 0)", {})
