"""benches/ops-attention.yaml and its kernel (benches/ops_attention.py): it validates, plans
CPU cells of the backends a CPU has, runs them with the check passing, and a backend that
cannot run a cell fails it with torch's reason. The CUDA test skips without a GPU."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import invoke, new_project

from kernbench.analyze.metrics import expression_metrics
from kernbench.errors import EXIT_OK
from kernbench.kernels import resolve_factory
from kernbench.plan import plan
from kernbench.spec.loader import load_bench

torch = pytest.importorskip("torch")

BENCHES = Path(__file__).resolve().parents[1] / "benches"
BENCH = BENCHES / "ops-attention.yaml"
TINY = {"batch": 1, "heads": 2, "seq": 32, "head_dim": 16, "causal": False}
# What torch 2.11 warned on an H200 for a flash-only fp32 call (2026-12-03), in order.
H200_WARNINGS = [
    "Memory efficient kernel not used because: (Triggered internally at "
    "/pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:986.)",
    "Memory Efficient attention has been runtime disabled. (Triggered internally at "
    "/pytorch/aten/src/ATen/native/transformers/sdp_utils_cpp.h:552.)",
    "Flash attention kernel not used because: (Triggered internally at "
    "/pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:988.)",
    "Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: "
    "float, Key dtype: float, and Value dtype: float instead. (Triggered internally at "
    "/pytorch/aten/src/ATen/native/transformers/sdp_utils_cpp.h:105.)",
    "cuDNN attention kernel not used because: (Triggered internally at "
    "/pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:990.)",
    "cuDNN attention has been runtime disabled. (Triggered internally at "
    "/pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:706.)",
]


@pytest.fixture
def make() -> Any:
    return resolve_factory(load_bench(BENCH).kernel, BENCHES)  # type: ignore[arg-type]


def module(make: Any) -> Any:
    import sys

    return sys.modules[make.__module__]


def enabled() -> dict[str, bool]:
    cuda = torch.backends.cuda
    return {
        "math": cuda.math_sdp_enabled(),
        "flash": cuda.flash_sdp_enabled(),
        "efficient": cuda.mem_efficient_sdp_enabled(),
        "cudnn": cuda.cudnn_sdp_enabled(),
    }


def test_the_bench_validates_and_plans_a_few_cpu_cells_of_the_cpus_backends() -> None:
    code, out, err = invoke("validate", str(BENCH))
    assert code == EXIT_OK, out + err
    bench = load_bench(BENCH)
    cpu = plan(bench, "cpu")
    assert len(cpu) == 8
    assert {cell.variant for cell in cpu} == {"math", "flash"}
    assert {cell.params["dtype"] for cell in cpu} == {"fp32"}
    cuda = plan(bench, "cuda")
    assert len(cuda) == 184  # ~2 minutes on an H200 (2026-12-03)
    assert {cell.variant for cell in cuda} == {"math", "flash", "efficient", "cudnn"}
    assert {cell.params["dtype"] for cell in cuda} == {"bf16", "fp16"}
    assert not [c for c in cuda if c.variant == "math" and c.params["seq"] == 16384]


def test_a_causal_cell_counts_half_the_flops() -> None:
    bench = load_bench(BENCH)
    params = {"batch": 2, "heads": 32, "head_dim": 64, "seq": 1024, "dtype": "bf16"}
    full = expression_metrics(bench, {**params, "causal": False})
    causal = expression_metrics(bench, {**params, "causal": True})
    assert full["flops"] == 4 * 2 * 32 * 1024 * 1024 * 64
    assert causal["flops"] == full["flops"] / 2
    assert causal["bytes"] == full["bytes"] == 4 * 2 * 32 * 1024 * 64 * 2


@pytest.mark.slow
def test_the_cpu_run_passes_its_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    for name in ("ops-attention.yaml", "ops_attention.py"):
        shutil.copy(BENCHES / name, root / "benches")
    code, out, err = invoke(
        "run", "--bench", "ops-attention", "--device", "cpu", "--only", "seq=32", "--out", "run"
    )
    assert code == EXIT_OK, out + err
    cells = json.loads((root / "run" / "results.json").read_text())["cells"]
    assert {c["variant"] for c in cells} == {"math", "flash"} and len(cells) == 4
    assert all(c["status"] == "ok" and c["rounds"][0]["check"]["ok"] for c in cells)
    assert {c["rounds"][0]["extra"]["sdpa_backend"] for c in cells} == {"math", "flash"}


def test_a_backend_the_cpu_lacks_fails_the_cell_with_its_reason(make: Any) -> None:
    before = enabled()
    with pytest.raises(RuntimeError, match="SDPA backend efficient cannot run this cell on cpu"):
        make(**TINY, backend="efficient", dtype="fp32", device="cpu")
    assert enabled() == before  # the flags given back
    kernel = make(**TINY, backend="math", dtype="fp32", device="cpu")  # the next cell runs
    assert kernel.check().ok
    kernel.close()


def test_the_reason_is_the_chosen_backends_without_where_torch_raised_it(make: Any) -> None:
    reasons = module(make)._reasons
    assert reasons(H200_WARNINGS, "flash") == [
        "Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query "
        "dtype: float, Key dtype: float, and Value dtype: float instead."
    ]
    assert reasons(H200_WARNINGS, "math") == []  # the caller then gives torch's error


def test_cells_held_at_once_each_run_their_own_backend_and_close_restores(make: Any) -> None:
    before = enabled()
    math = make(**TINY, backend="math", dtype="fp32", device="cpu")
    flash = make(**TINY, backend="flash", dtype="fp32", device="cpu")  # selected last
    math.run()
    assert enabled() == {"math": True, "flash": False, "efficient": False, "cudnn": False}
    flash.run()
    assert enabled() == {"math": False, "flash": True, "efficient": False, "cudnn": False}
    assert math.check().ok and flash.check().ok
    assert enabled()["flash"]  # the check's math reference left flash selected
    math.close()
    flash.close()
    assert enabled() == before


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("backend", ["math", "flash", "efficient", "cudnn"])
def test_each_backend_passes_its_check_on_cuda(make: Any, backend: str) -> None:
    shape = {**TINY, "seq": 512, "head_dim": 64, "causal": True}
    kernel = make(**shape, backend=backend, dtype="bf16", device="cuda")
    try:
        assert kernel.check().ok
    finally:
        kernel.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_flash_refuses_fp32_on_cuda_with_torchs_reason(make: Any) -> None:
    with pytest.raises(RuntimeError, match=r"backend flash cannot run .*\{Half, BFloat16\}"):
        make(**TINY, backend="flash", dtype="fp32", device="cuda")
