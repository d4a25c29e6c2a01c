"""Timer fidelity: kernbench's CUDA timers against triton.testing.do_bench and Nsight Compute.

In one process, each case is timed by several tools, interleaved: `--reps` repetitions of
[kernbench event timer with its read flush, the same timer with do_bench's write flush,
kernbench graph timer, do_bench], the order reversed every other repetition, each tool a
short run (~0.1 s of samples) so all see the same power and clock state. A thread reads
the SM clock (NVML) every few ms while each tool runs. Each tool's number is the median
of its repetition medians; each ratio comes with its per-repetition spread.

The flushes: kernbench "read" sums a buffer of 2x L2 (clean lines); do_bench zero-fills
256 MiB (dirty lines, written back inside the next kernel); kernbench "write" zero-fills
the same 256 MiB, so event-write vs do_bench compares the timers alone. ncu (run after,
in a child process) times isolated launches, flushing caches (--cache-control all) or not
(none), never touching clocks, and reads the SM clock each launch ran at.

    python3 scripts/fidelity.py --out fidelity.json   # also writes fidelity.md beside it
    python3 scripts/fidelity.py --render fidelity.json  # rebuild the .md from the JSON

This file measures and runs ncu: the cases are in `fidelity_cases.py`, the tools that time
them in `fidelity_tools.py`; `fidelity_page.py` reads ncu's launches and writes the page,
from the JSON alone.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from fidelity_cases import GEMM_SIZES, cases, make_case, order, tools_for  # noqa: E402
from fidelity_ncu import NCU_CACHE, NCU_CALLS, NCU_CLOCK, NCU_TIME, parse_ncu_csv  # noqa: E402
from fidelity_page import write  # noqa: E402 - the page, pure: rendered from the JSON alone
from fidelity_summary import rep_stats  # noqa: E402
from fidelity_tools import (  # noqa: E402
    CLOCK_PERIOD_S,
    DO_BENCH_FLUSH_BYTES,
    DO_BENCH_MS,
    PRECONDITION_IDLE_S,
    PRECONDITION_S,
    SPEC,
    Tools,
    warm,
)

REPS = 6
NVTX_RANGE = "kernbench-fidelity"


def measure_case(tools: Tools, name: str, reps: int, also: Sequence[str] = ()) -> dict[str, Any]:
    from kernbench.timing import choose_timer

    kernel = make_case(name)
    check = kernel.check() if kernel.check else None
    auto = choose_timer(kernel, tools.spec.model_copy(update={"kind": "auto"}), "cuda").name
    warm(kernel)
    names = list(tools_for(name)) + [tool for tool in also if tool not in tools_for(name)]
    runs: dict[str, list[dict[str, Any]]] = {tool: [] for tool in names}
    errors: dict[str, str] = {}
    orders = []
    for rep in range(reps):
        orders.append(order(rep, names))
        for tool in orders[-1]:
            try:
                runs[tool].append(tools.run(tool, kernel))
            except Exception as exc:  # noqa: BLE001 - a tool that fails is left out, named
                errors[tool] = f"{type(exc).__name__}: {exc}"[:300]
                names.remove(tool)
                del runs[tool]
    medians = {tool: rep_stats([r["median_s"] for r in rows]) for tool, rows in runs.items()}
    return {
        "auto_timer": auto,
        "check_rel_err": check.rel_err if check else None,
        "orders": orders,
        "runs": runs,
        "tool_errors": errors,
        # read by scripts/gpu_smoke.py
        "event_median_s": medians.get("event_read", {}).get("median"),
        "do_bench_median_s": medians.get("do_bench", {}).get("median"),
    }


def measure(names: list[str], reps: int, also: Sequence[str] = (), preconditioned: bool = True
            ) -> dict[str, dict[str, Any]]:
    import torch

    tools = Tools()
    tools.preconditioned = preconditioned
    out = {}
    for name in names:
        started = time.perf_counter()
        try:
            out[name] = measure_case(tools, name, reps, also)
        except Exception as exc:  # noqa: BLE001 - one broken case must not cost the GPU call
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        torch.cuda.empty_cache()
        print(f"{name}: {time.perf_counter() - started:.1f} s", flush=True)
    return out


# -- ncu -------------------------------------------------------------------------------------


def child(names: list[str]) -> None:
    """Under ncu: per case, a marker kernel, then NCU_CALLS calls, inside one NVTX range."""
    import torch

    marker = torch.empty(1, device="cuda")
    kernels = [make_case(name) for name in names]
    for kernel in kernels:
        for _ in range(3):
            kernel.run()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    for kernel in kernels:
        marker.fill_(1.0)
        for _ in range(NCU_CALLS):
            kernel.run()
        torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def run_ncu(names: list[str], cache: str, timeout_s: float) -> dict[str, Any]:
    """ncu on a child process; without the clock metric if ncu refuses it."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"error": "ncu not on PATH"}
    found = ncu_once(ncu, names, cache, f"{NCU_TIME},{NCU_CLOCK}", timeout_s)
    if "error" in found and "took over" not in found["error"]:
        found = ncu_once(ncu, names, cache, NCU_TIME, timeout_s) | {"first_error": found["error"]}
    return found


def ncu_once(ncu: str, names: list[str], cache: str, metrics: str, timeout_s: float) -> dict:
    command = [
        ncu, "--clock-control", "none", "--cache-control", cache, "--metrics", metrics, "--csv",
        "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
        sys.executable, __file__, "--child", *names,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"ncu took over {timeout_s:.0f} s"}
    launches = parse_ncu_csv(done.stdout)
    if not launches:
        return {"error": f"no launches; rc {done.returncode}: {(done.stdout + done.stderr)[-600:]}"}
    return {"launches": launches, "metrics": metrics}


# -- provenance and main ----------------------------------------------------------------------


def provenance() -> dict[str, Any]:
    import torch
    import triton

    from kernbench.results.provenance import utc_now
    from kernbench.timing import nvml

    return {
        "date": utc_now(),
        "gpu": torch.cuda.get_device_name(),
        "driver": nvml.driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size,
        "flush": {
            "event_read, graph_read": "kernbench: sum of a buffer of 2x the device L2 "
            "before each sample (clean lines)",
            "event_write": f"kernbench with flush='write': zero_() of {DO_BENCH_FLUSH_BYTES} "
            "bytes before each sample (do_bench's flush)",
            "do_bench": f"cache.zero_() on {DO_BENCH_FLUSH_BYTES} bytes before each call (dirty "
            "lines)",
            "ncu all": "--cache-control all: caches flushed before each profiled launch",
            "ncu none": "--cache-control none: no flush",
            "graph_warm, do_bench_cudagraph": "no flush",
        },
    }


def settings(names: list[str], reps: int, precondition_s: float | None) -> dict[str, Any]:
    return {
        "cases": names,
        "reps": reps,
        "precondition_s": precondition_s,
        "precondition_idle_s": PRECONDITION_IDLE_S if precondition_s else None,
        "kernbench_spec": SPEC,
        "do_bench_ms": DO_BENCH_MS,
        "clock_period_s": CLOCK_PERIOD_S,
        "ncu_calls": NCU_CALLS,
        "ncu_metrics": [NCU_TIME, NCU_CLOCK],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("fidelity.json"))
    parser.add_argument("--sizes", type=int, nargs="*", default=list(GEMM_SIZES))
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--no-ncu", action="store_true")
    parser.add_argument("--ncu-timeout", type=float, default=120.0)
    parser.add_argument("--render", type=Path, help="rebuild the .md of this JSON and exit")
    parser.add_argument("--cases", nargs="*", help="only these cases (e.g. gemm-fp16-4096)")
    parser.add_argument("--also", nargs="*", default=[], help="more tools (Tools' methods)")
    parser.add_argument("--no-precondition", action="store_true",
                        help="each tool in the state the one before it left (before 12-01)")
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    if args.render is not None:
        import json

        print(write(args.render, json.loads(args.render.read_text())))
        return
    names = args.cases or cases(args.sizes)
    precondition_s = None if args.no_precondition else PRECONDITION_S
    data: dict[str, Any] = {"provenance": provenance(),
                            "settings": settings(names, args.reps, precondition_s)}
    data["cases"] = measure(names, args.reps, args.also, not args.no_precondition)
    data["ncu"] = {}
    for cache in NCU_CACHE:
        if args.no_ncu:
            data["ncu"][cache] = {"error": "skipped (--no-ncu)"}
            continue
        started = time.perf_counter()
        data["ncu"][cache] = run_ncu(names, cache, args.ncu_timeout)
        print(f"ncu {cache}: {time.perf_counter() - started:.1f} s", flush=True)
    print(write(args.out, data))


if __name__ == "__main__":
    main()
