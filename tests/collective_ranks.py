"""A script the slow collective tests start as ranks through `kernbench.execute.launch`.

`collective_ranks.py cells OUT.json`: run a few gloo cells through the `collective`
factory (make, check, and the timer `choose_timer` gives, as the worker does); rank 0
writes what it saw.
`collective_ranks.py die [DEVICE]`: rank 1 exits mid-collective while rank 0 waits in it.
`collective_ranks.py sweep OUT.json DEVICE SIZES`: every op at the comma-separated sizes
with the default timer settings (for a GPU comparison with scripts/ccl_reference.py).
`collective_ranks.py sleep DIR`: each rank writes its pid and process group to DIR, then
sleeps (to test that no rank outlives its launcher).
`collective_ranks.py settle DIR`: each rank settles a gloo cell under the ranks timer, rank
0 with a clock reading and rank 1 without, and writes its settle record to DIR.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kernbench.execute.launch import launch_env, launcher_argv
from kernbench.kernels.collective import make
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import choose_timer
from kernbench.timing.nvml import Reading
from kernbench.timing.ranks import RanksTimer

REPO = Path(__file__).resolve().parents[1]


def run_two_gloo_ranks(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """This script with `args` as two gloo ranks through kernbench's launcher (for tests)."""
    env = {**os.environ, **launch_env("cpu"), "PYTHONPATH": str(REPO)}
    return subprocess.run(launcher_argv(2, [__file__, *args]), cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


CELLS = [
    {"op": "allreduce", "bytes": 4096, "inplace": True, "dtype": "fp32"},
    {"op": "allreduce", "bytes": 4096, "inplace": True, "dtype": "bf16"},
    {"op": "allgather", "bytes": 4096, "inplace": False, "dtype": "fp32"},
    {"op": "allgather", "bytes": 4096, "inplace": True, "dtype": "bf16"},
    {"op": "reduce_scatter", "bytes": 4096, "inplace": False, "dtype": "bf16"},
    {"op": "reduce_scatter", "bytes": 4096, "inplace": True, "dtype": "fp32"},
]
SPEC = TimerSpec(warmup_s=0.01, budget_s=0.05, min_samples=5)


def run_cells(
    out_path: str, cells: list[dict] = CELLS, device: str = "cpu", spec: TimerSpec = SPEC
) -> None:
    world_size = int(os.environ["WORLD_SIZE"])
    seen = []
    for params in cells:
        kernel = make(**params, world_size=world_size, device=device)
        check = kernel.check()
        measurement = choose_timer(kernel, spec, device).measure(kernel, spec)
        kernel.close()
        seen.append(
            {
                "params": params,
                "rel_err": check.rel_err,
                "ok": check.ok,
                "samples": len(measurement.samples_s),
                "median_s": sorted(measurement.samples_s)[len(measurement.samples_s) // 2],
                "stop_reason": measurement.stop_reason,
                "extra": measurement.extra,
            }
        )
    if int(os.environ["RANK"]) == 0:
        with open(out_path, "w") as handle:
            json.dump(seen, handle)


def die_mid_collective(device: str = "cpu") -> None:
    kernel = make(op="allreduce", bytes=4096, world_size=2, device=device)
    kernel.run()
    if int(os.environ["RANK"]) == 1:
        time.sleep(0.5)
        os._exit(9)
    while True:  # rank 0 waits in a collective its peer never joins
        kernel.run()


def settle_each_rank(folder: str) -> None:
    rank = int(os.environ["RANK"])
    spec = TimerSpec(warmup_s=0.01, budget_s=0.02, min_samples=5, settle_min_s=0.03,
                     settle_s=0.1, settle_clock=True)
    clock = (lambda: Reading(1500.0, 0)) if rank == 0 else (lambda: None)
    kernel = make(op="allreduce", bytes=4096, world_size=2, device="cpu")
    measured = RanksTimer(clock, device="cuda").measure(kernel, spec)
    kernel.close()
    with open(os.path.join(folder, f"rank{rank}.json"), "w") as handle:
        json.dump({"settle": measured.settle, "samples": len(measured.samples_s)}, handle)


def sleep_forever(folder: str) -> None:
    rank = os.environ["RANK"]
    path = os.path.join(folder, f"rank{rank}.json")
    with open(path + ".tmp", "w") as handle:
        json.dump({"pid": os.getpid(), "pgid": os.getpgid(0)}, handle)
    os.replace(path + ".tmp", path)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    if sys.argv[1] == "cells":
        run_cells(sys.argv[2])
    elif sys.argv[1] == "sweep":
        sizes = [int(size) for size in sys.argv[4].split(",")]
        sweep = [
            {"op": op, "bytes": size, "inplace": inplace, "dtype": "bf16"}
            for op in ("allreduce", "allgather", "reduce_scatter")
            for inplace in (True, False)
            for size in sizes
            if inplace or op != "allreduce"
        ]
        run_cells(sys.argv[2], sweep, sys.argv[3], TimerSpec())
    elif sys.argv[1] == "sleep":
        sleep_forever(sys.argv[2])
    elif sys.argv[1] == "settle":
        settle_each_rank(sys.argv[2])
    else:
        die_mid_collective(*sys.argv[2:3])
