"""Timer fidelity: kernbench's CUDA timers against triton.testing.do_bench and Nsight Compute.

Every case is timed in one process by kernbench's EventTimer (and GraphTimer for the tiny
add) and by do_bench (median), all with a cold L2; where `ncu` works, a child process runs
each case a few times inside an NVTX range and ncu reads gpu__time_duration.sum per launch.

How each flushes L2: kernbench reads a buffer twice the device's L2 before each sample
(clean lines, no write-back inside the timed kernel); do_bench zero-fills a fixed 256 MB
buffer (dirty lines); ncu's default --cache-control all flushes every cache before each
profiled launch. do_bench_cudagraph is shown for the add too, and does not flush.

    python3 scripts/fidelity.py --out fidelity.json   # also writes fidelity.md beside it
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GEMM_SIZES = (1024, 2048, 4096, 8192)
ADD_ELEMENTS = 65536
NCU_CALLS = 3  # profiled calls per case
NVTX_RANGE = "kernbench-fidelity"
UNIT_SECONDS = {
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
}  # fmt: skip


def make_case(name: str) -> Any:
    """A case by name: 'gemm-bf16-N' (cuBLAS through kernbench's gemm_cuda) or 'add-N'."""
    import torch

    from kernbench.kernels import gemm_cuda
    from kernbench.kernels.base import Kernel

    kind, *rest = name.split("-")
    if kind == "gemm":
        n = int(rest[1])
        return gemm_cuda.make(M=n, N=n, K=n, dtype=rest[0])
    n = int(rest[0])
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    return Kernel(run=lambda: torch.add(x, y, out=z), synchronize=torch.cuda.synchronize)


def cases(sizes: tuple[int, ...]) -> list[str]:
    return [f"gemm-bf16-{n}" for n in sizes] + [f"add-{ADD_ELEMENTS}"]


def child(names: list[str]) -> None:
    """Under ncu: warm each case up, then NCU_CALLS calls inside the NVTX range."""
    import torch

    for name in names:
        kernel = make_case(name)
        for _ in range(3):
            kernel.run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        for _ in range(NCU_CALLS):
            kernel.run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


def parse_ncu_csv(text: str) -> list[tuple[str, float]]:
    """(kernel name, seconds) per profiled launch, in launch order."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = []
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        rows.append((int(row["ID"]), row["Kernel Name"], value * UNIT_SECONDS[row["Metric Unit"]]))
    return [(name, seconds) for _, name, seconds in sorted(rows)]


def run_ncu(names: list[str], timeout_s: float) -> dict[str, Any]:
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"error": "ncu not on PATH"}
    command = [
        ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
        "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
        sys.executable, __file__, "--child", *names,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"ncu took over {timeout_s:.0f} s"}
    launches = parse_ncu_csv(done.stdout)
    if len(launches) != len(names) * NCU_CALLS:
        tail = (done.stdout + done.stderr)[-600:]
        return {"error": f"ncu gave {len(launches)} launches, expected "
                f"{len(names) * NCU_CALLS}; rc {done.returncode}: {tail}"}  # fmt: skip
    out: dict[str, Any] = {}
    for i, name in enumerate(names):
        mine = launches[i * NCU_CALLS : (i + 1) * NCU_CALLS]
        out[name] = {
            "median_s": statistics.median(s for _, s in mine),
            "kernel": mine[0][0][:120],
        }
    return out


def measure(names: list[str]) -> dict[str, dict[str, Any]]:
    import torch
    import triton.testing

    from kernbench.spec import TimerSpec
    from kernbench.timing.cuda import EventTimer, GraphTimer

    spec = TimerSpec(warmup_s=0.1, budget_s=1.0, min_samples=20, rel_ci=0.005, l2="cold")
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        kernel = make_case(name)
        check = kernel.check() if kernel.check else None
        event = EventTimer().measure(kernel, spec)
        row: dict[str, Any] = {
            "event_median_s": statistics.median(event.samples_s),
            "event_samples": len(event.samples_s),
            "do_bench_median_s": triton.testing.do_bench(kernel.run, return_mode="median") * 1e-3,
            "check_rel_err": check.rel_err if check else None,
        }
        if name.startswith("add"):
            graph = GraphTimer().measure(kernel, spec)
            row["graph_median_s"] = statistics.median(graph.samples_s)
            row["graph_launches"] = graph.extra.get("launches_per_graph")
            warm = GraphTimer().measure(kernel, spec.model_copy(update={"l2": "warm"}))
            row["graph_warm_median_s"] = statistics.median(warm.samples_s)
            with torch.cuda.stream(torch.cuda.Stream()):
                row["do_bench_cudagraph_median_s"] = (
                    triton.testing.do_bench_cudagraph(kernel.run, return_mode="median") * 1e-3
                )
        rows[name] = row
        del kernel
        torch.cuda.empty_cache()
    return rows


def provenance() -> dict[str, Any]:
    import torch
    import triton

    from kernbench.timing import nvml

    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": torch.cuda.get_device_name(),
        "driver": nvml.driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size,
        "flush": {
            "kernbench": "reads a buffer of 2x the device L2 before each sample (clean lines)",
            "do_bench": "cache.zero_() on a fixed 256 MB buffer before each call (dirty lines)",
            "ncu": "--cache-control all (default): caches flushed before each profiled launch",
            "do_bench_cudagraph": "no flush",
        },
    }


def markdown(rows: dict[str, dict[str, Any]], ncu: dict[str, Any], meta: dict[str, Any]) -> str:
    def us(value: Any) -> str:
        return f"{value * 1e6:.2f}" if isinstance(value, float) else "-"

    lines = [
        f"# Timer fidelity: {meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, "
        f"driver {meta['driver']}, {meta['date']}",
        "",
        "| case | kernbench event µs | kernbench graph µs | do_bench µs | ncu µs "
        "| event / do_bench | event / ncu |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in rows.items():
        event, bench = row["event_median_s"], row["do_bench_median_s"]
        ncu_s = ncu.get(name, {}).get("median_s") if isinstance(ncu.get(name), dict) else None
        lines.append(
            f"| {name} | {us(event)} | {us(row.get('graph_median_s'))} | {us(bench)} "
            f"| {us(ncu_s)} | {event / bench:.3f} | "
            f"{f'{event / ncu_s:.3f}' if ncu_s else '-'} |"
        )
    lines += ["", "All cold L2. " + "; ".join(f"{k}: {v}" for k, v in meta["flush"].items())]
    if "error" in ncu:
        lines.append(f"\nncu: {ncu['error']}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("fidelity.json"))
    parser.add_argument("--sizes", type=int, nargs="*", default=list(GEMM_SIZES))
    parser.add_argument("--no-ncu", action="store_true")
    parser.add_argument("--ncu-timeout", type=float, default=240.0)
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    names = cases(tuple(args.sizes))
    meta = provenance()
    rows = measure(names)
    ncu = {"error": "skipped (--no-ncu)"} if args.no_ncu else run_ncu(names, args.ncu_timeout)
    from kernbench.results import write_json

    write_json(args.out, {"provenance": meta, "cases": rows, "ncu": ncu})
    text = markdown(rows, ncu, meta)
    args.out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
