from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernbench.kernels.collective import _next_chunk, _stop_reason, make
from kernbench.spec.models import TimerSpec

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).with_name("collective_ranks.py")
FAST = TimerSpec(warmup_s=0.005, budget_s=0.02, min_samples=5, max_samples=40)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"op": "alltoall", "bytes": 1024}, "unknown op 'alltoall'; known: allreduce"),
        ({"op": "allreduce", "bytes": 1024, "inplace": False}, "no out-of-place form"),
        ({"op": "allreduce", "bytes": 1026}, r"multiple of the item size \(4\)"),
        (
            {"op": "allgather", "bytes": 1028, "world_size": 8, "dtype": "bf16"},
            r"multiple of world_size × item size \(16\) for allgather",
        ),
        ({"op": "allreduce", "bytes": 1024, "dtype": "fp8"}, "dtype 'fp8' is not supported"),
        ({"op": "allreduce", "bytes": 1024, "device": "mps"}, "unknown device 'mps'"),
    ],
)
def test_bad_cells_fail_with_a_reason(params: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(**params)  # type: ignore[arg-type]


def test_more_ranks_than_running_is_an_error() -> None:
    with pytest.raises((RuntimeError, ValueError), match="world_size=2"):
        make(op="allreduce", bytes=1024, world_size=2)


CASES = [
    (op, inplace, dtype)
    for op in ("allreduce", "allgather", "reduce_scatter")
    for inplace in (True, False)
    for dtype in ("fp32", "bf16")
    if inplace or op != "allreduce"
]


@pytest.mark.parametrize(("op", "inplace", "dtype"), CASES)
def test_one_rank_checks_exactly_and_times_itself(op: str, inplace: bool, dtype: str) -> None:
    kernel = make(op=op, bytes=4096, world_size=1, inplace=inplace, dtype=dtype)
    try:
        check = kernel.check()
        assert (check.rel_err, check.tolerance) == (0.0, 0.0)
        assert kernel.measure is not None
        measurement = kernel.measure(FAST)
    finally:
        assert kernel.close is not None
        kernel.close()
    assert measurement.timer == "collective"
    assert FAST.min_samples <= len(measurement.samples_s) <= FAST.max_samples
    assert all(t > 0 for t in measurement.samples_s)
    assert measurement.extra["world_size"] == 1 and measurement.extra["backend"] == "gloo"
    assert len(measurement.extra["per_rank_median_s"]) == 1
    assert measurement.warmup_calls >= 2


def test_a_collective_that_does_nothing_fails_its_check() -> None:
    kernel = make(op="allgather", bytes=4096, world_size=1, inplace=False)
    collective = kernel.run.__self__  # type: ignore[attr-defined]
    collective._call = lambda: None  # the output keeps its zeros
    assert kernel.check is not None
    check = kernel.check()
    assert check.rel_err == pytest.approx(1.0) and not check.ok


def test_sums_past_the_exact_range_get_the_dtype_tolerance() -> None:
    kernel = make(op="allreduce", bytes=4096, world_size=1, dtype="bf16")
    collective = kernel.run.__self__  # type: ignore[attr-defined]
    collective.world_size = 65  # as if: 4 × 65 = 260 > 256, bf16's last exact integer
    assert collective.check().tolerance == pytest.approx(2e-2)


def test_chunks_cover_min_samples_then_grow_within_limits() -> None:
    spec = TimerSpec(min_samples=10, max_samples=100, budget_s=1.0)
    assert _next_chunk(0, spec, 0.0, 1e-3) == 10
    assert _next_chunk(40, spec, 0.04, 1e-3) == 20
    assert _next_chunk(90, spec, 0.09, 1e-3) == 10  # max_samples
    assert _next_chunk(40, spec, 0.9995, 1e-3) == 1  # budget nearly spent


def test_stop_rules() -> None:
    spec = TimerSpec(min_samples=5, max_samples=8, budget_s=1.0, rel_ci=0.01)
    assert _stop_reason([1.0] * 4, spec, 2.0) is None  # below min_samples, whatever the budget
    assert _stop_reason([1.0] * 5, spec, 0.1) is None  # 5 values: no 95% median interval
    assert _stop_reason([1.0] * 6, spec, 0.1) == "converged"
    noisy = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert _stop_reason(noisy, spec, 0.5) is None
    assert _stop_reason(noisy, spec, 1.0) == "budget"
    assert _stop_reason(noisy + [7.0, 8.0], spec, 0.5) == "max_samples"


@pytest.mark.slow
def test_modules_import_without_torch() -> None:
    code = (
        "import sys\n"
        "import kernbench.execute.launch, kernbench.kernels.collective\n"
        "import kernbench.analyze.collective\n"
        "import kernbench.render.ccl\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.slow
def test_two_gloo_ranks_check_and_time_every_op(tmp_path: Path) -> None:
    from kernbench.execute.launch import launch_env, launcher_argv

    out = tmp_path / "seen.json"
    env = {**os.environ, **launch_env("cpu"), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        launcher_argv(2, [str(SCRIPT), "cells", str(out)]),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(out.read_text())
    assert {(s["params"]["op"], s["params"]["dtype"]) for s in seen} == {
        ("allreduce", "fp32"),
        ("allreduce", "bf16"),
        ("allgather", "fp32"),
        ("allgather", "bf16"),
        ("reduce_scatter", "bf16"),
        ("reduce_scatter", "fp32"),
    }
    for cell in seen:
        assert cell["ok"] and cell["rel_err"] == 0.0, cell
        assert cell["samples"] >= 5 and cell["median_s"] > 0
        assert cell["extra"]["world_size"] == 2 and cell["extra"]["backend"] == "gloo"
        assert len(cell["extra"]["per_rank_median_s"]) == 2
        # The cell's sample is the slowest rank's: never under either rank's own median.
        assert cell["median_s"] >= min(cell["extra"]["per_rank_median_s"])
