"""benches/ops-norm.yaml and its kernel (benches/ops_norm.py): it validates, plans eager
CPU cells only (torch.compile and the Triton kernels are CUDA's), runs a few with the
check passing and the bandwidth drawn against the memory's; the Triton variant refuses a
CPU with why; its kernels pass the check under Triton's interpreter where triton is
installed, and every backend passes it on CUDA where there is a GPU."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import invoke, new_project

from kernbench.analyze.metrics import expression_metrics
from kernbench.errors import EXIT_OK, EXIT_USAGE
from kernbench.kernels import resolve_factory
from kernbench.kernels.backends import BackendUnavailable
from kernbench.plan import plan
from kernbench.spec.loader import load_bench

torch = pytest.importorskip("torch")

BENCHES = Path(__file__).resolve().parents[1] / "benches"
BENCH = BENCHES / "ops-norm.yaml"
OPS = ("softmax", "layer_norm", "rms_norm")
ODD = {"rows": 5, "hidden": 1000}  # a row shorter than its power-of-two block


@pytest.fixture
def make() -> Any:
    return resolve_factory(load_bench(BENCH).kernel, BENCHES)  # type: ignore[arg-type]


def test_the_bench_validates_and_plans_eager_cpu_cells_and_every_variant_on_cuda() -> None:
    code, out, err = invoke("validate", str(BENCH))
    assert code == EXIT_OK, out + err
    bench = load_bench(BENCH)
    cpu = plan(bench, "cpu")
    assert len(cpu) == 18  # about 20 s on an idle 2-core laptop
    assert {cell.variant for cell in cpu} == {"eager"}
    assert {cell.params["hidden"] for cell in cpu} == {1024, 2048, 4096}
    cuda = plan(bench, "cuda")
    assert len(cuda) == 180  # `kernbench plan` estimates 3 minutes on a GPU
    assert {cell.variant for cell in cuda} == {"eager", "compile", "triton"}
    assert {cell.params["dtype"] for cell in cuda} == {"bf16", "fp32"}


def test_a_cpu_asked_for_the_gpu_variants_is_told_which_it_has() -> None:
    code, _, err = invoke("plan", "--bench", str(BENCH), "--device", "cpu",
                          "--only", "variant=triton")
    assert code == EXIT_USAGE
    assert "no cell has variant=triton; variant takes eager" in err


def test_each_element_is_counted_read_once_and_written_once() -> None:
    params = {"op": "layer_norm", "rows": 1024, "hidden": 4096, "dtype": "bf16"}
    assert expression_metrics(load_bench(BENCH), params)["bytes"] == 2 * 1024 * 4096 * 2


def test_the_triton_variant_refuses_a_cpu_with_why(make: Any) -> None:
    with pytest.raises(BackendUnavailable, match="backend triton runs on cuda, not cpu"):
        make(op="softmax", **ODD, backend="triton", dtype="fp32", device="cpu")


@pytest.mark.parametrize("op", OPS)
def test_the_check_passes_the_ops_output_and_fails_anothers(make: Any, op: str) -> None:
    module = sys.modules[make.__module__]
    x, weight, bias = torch.randn(5, 1000), 1 + 0.1 * torch.randn(1000), 0.1 * torch.randn(1000)
    other = OPS[OPS.index(op) - 1]
    for made, ok in ((op, True), (other, False)):
        output = module._functional(made)(x, weight, bias)
        assert module._check(lambda: output, op, x, weight, bias, "fp32").ok is ok  # noqa: B023


@pytest.mark.slow
def test_a_cpu_cell_runs_passes_its_check_and_draws_the_bandwidth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    for name in ("ops-norm.yaml", "ops_norm.py"):
        shutil.copy(BENCHES / name, root / "benches")
    only = ("op=layer_norm", "hidden=1024", "dtype=fp32")  # one cell: x, weight and bias
    code, out, err = invoke("run", "--bench", "ops-norm", "--device", "cpu",
                            *(f"--only={o}" for o in only), "--out", "run")
    assert code == EXIT_OK, out + err
    (cell,) = json.loads((root / "run" / "results.json").read_text())["cells"]
    assert cell["status"] == "ok" and cell["rounds"][0]["check"]["ok"]
    figure = json.loads((root / "run" / "figures" / "bandwidth.json").read_text())
    assert figure["ceiling"]["label"] == "device memory bandwidth"


INTERPRETED = """
import sys
from pathlib import Path
from kernbench.kernels import resolve_factory
make = resolve_factory("ops_norm:make", Path(sys.argv[1]))
for op in ("softmax", "layer_norm", "rms_norm"):
    for dtype in ("fp32", "bf16"):
        kernel = make(op=op, rows=5, hidden=1000, backend="triton", dtype=dtype, device="cpu")
        result = kernel.check()
        assert result.ok, (op, dtype, result)
"""


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")
def test_the_triton_kernels_pass_their_check_under_tritons_interpreter() -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1"}  # runs the kernels on the CPU, in numpy
    done = subprocess.run([sys.executable, "-c", INTERPRETED, str(BENCHES)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("backend", ["torch", "compile", "triton"])
@pytest.mark.parametrize("op", OPS)
def test_each_backend_passes_its_check_on_cuda(make: Any, op: str, backend: str) -> None:
    kernel = make(op=op, **ODD, backend=backend, dtype="bf16", device="cuda")
    assert kernel.check().ok


def test_the_triton_variant_refuses_a_row_longer_than_the_longest_measured(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 32768 was never measured, and there layer_norm's row, weight and bias overflow a
    # thread's registers at 16 warps: 16384, the H200 sweep's longest, is the cap.
    module = sys.modules[make.__module__]
    monkeypatch.setattr(module, "triton", object())  # as if installed, under its interpreter
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    module._triton_can_run(16384, "cpu")
    with pytest.raises(BackendUnavailable, match="hidden 16385 is over 16384, the longest"):
        module._triton_can_run(16385, "cpu")
