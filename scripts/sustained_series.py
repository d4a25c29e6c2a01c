"""The time series behind "sustained against do_bench" on a power-capped GPU (issue 11).

The fidelity page (scripts/fidelity.py) compares medians: on a power-capped H200
kernbench's sustained timer reads fp16 4096³ ~2.5% faster than triton's do_bench at the
same median NVML clock, and do_bench's own loop rebuilt in Python (loop_write) 3.5% slower
than do_bench. A median cannot say why; this records every sample in order instead. Per
case and repetition, each behind the fidelity page's precondition (0.2 s of do_bench's
flush and the kernel back to back):

- `do_bench`: triton.testing.do_bench, return_mode="all" (its samples in order);
- `event_write`: kernbench's sustained event timer with do_bench's flush (the samples in
  order, its warm-up and settle phase);
- `loop_write`: the fidelity page's rebuilt do_bench loop, with its samples in order;
- `step_hot`: after the precondition, 1 s of the flush and the kernel back to back, every
  sample's start on the GPU clock: how the card's speed moves under a load held on;
- `step_cold`: the same after 0.5 s idle (a card coming out of idle).

NVML (clock, power) is read every 2 ms on a thread (the fidelity page's ClockSampler), with
its wall time. do_bench's source
is saved too, to diff loop_write against what the GPU machine runs.

    python3 scripts/sustained_series.py --out series.json [--cases ...] [--reps 4]
    python3 scripts/sustained_series.py --figure series.json.gz series.png  # + episode table
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import fidelity_cases  # noqa: E402 - the fidelity page's cases
import fidelity_tools  # noqa: E402 - the fidelity page's tools and precondition

CASES = ("gemm-fp16-4096", "gemm-bf16-4096")
TOOLS = ("do_bench", "event_write", "loop_write")
STEP_S = 1.0
COLD_IDLE_S = 0.5
NVML_PERIOD_S = 0.002


def step(tools: fidelity_tools.Tools, kernel: Any, seconds: float) -> dict[str, Any]:
    """`seconds` of the write flush and the kernel back to back, each sample between its
    own events, all queued at once: (start on the GPU in ms from the first, sample µs)."""
    torch, device = tools.torch, tools.write_device
    probe = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(5)]
    for start, end in probe:
        start.record()
        kernel.run()
        end.record()
    torch.cuda.synchronize()
    one = statistics.median(s.elapsed_time(e) * 1e-3 for s, e in probe)
    calls = max(10, int(seconds / (one + 62e-6)))
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(calls)]
    for start, end in pairs:  # create the CUDA events before the timed stretch
        start.record()
        end.record()
    torch.cuda.synchronize()
    fidelity_tools.queue_flushed(device, kernel, pairs)
    torch.cuda.synchronize()
    origin = pairs[0][0]
    return {"t_ms": [round(origin.elapsed_time(s), 4) for s, _ in pairs],
            "samples_us": [round(s.elapsed_time(e) * 1e3, 3) for s, e in pairs]}


def run_tool(tools: fidelity_tools.Tools, tool: str, kernel: Any) -> dict[str, Any]:
    if tool == "do_bench":
        try:
            ms = tools.testing.do_bench(kernel.run, return_mode="all", **fidelity_tools.DO_BENCH_MS)
        except (AssertionError, ValueError):  # a triton without "all": the median alone
            median = tools.testing.do_bench(kernel.run, return_mode="median",
                                            **fidelity_tools.DO_BENCH_MS)
            return {"samples_us": [], "median_us": median * 1e3}
        return {"samples_us": [round(x * 1e3, 3) for x in ms]}
    if tool == "loop_write":
        found = tools.loop_write(kernel, keep_samples=True)
        return {"samples_us": [round(x * 1e6, 3) for x in found["samples_s"]]}
    if tool == "event_write":
        from kernbench.timing.cuda import EventTimer

        measured = EventTimer(tools.write_device).measure(kernel, tools.spec)
        return {"samples_us": [round(x * 1e6, 3) for x in measured.samples_s],
                "warmup_calls": measured.warmup_calls, "settle": measured.settle,
                "blocks_us": [round(b["median_s"] * 1e6, 3) for b in measured.blocks]}
    if tool == "step_hot":
        return step(tools, kernel, STEP_S)
    if tool == "step_cold":
        tools.torch.cuda.synchronize()
        time.sleep(COLD_IDLE_S)
        return step(tools, kernel, STEP_S)
    raise ValueError(f"unknown tool {tool!r}")


def measure(names: list[str], reps: int) -> dict[str, Any]:
    tools = fidelity_tools.Tools()
    out: dict[str, Any] = {}
    for name in names:
        kernel = fidelity_cases.make_case(name)
        fidelity_tools.warm(kernel)
        names_in_rep = list(TOOLS) + ["step_hot", "step_cold"]
        runs: dict[str, list[dict[str, Any]]] = {tool: [] for tool in names_in_rep}
        for rep in range(reps):
            order = fidelity_cases.order(rep, TOOLS) + ["step_hot", "step_cold"]
            for tool in order:
                if tool != "step_cold":
                    tools.precondition("event_write", kernel)
                origin = time.perf_counter()
                sampler = fidelity_tools.ClockSampler(tools.read_device.read_clock,
                                                      NVML_PERIOD_S)
                with sampler as nvml:
                    row = run_tool(tools, tool, kernel)
                readings = [[round(t, 5), r.sm_clock_mhz, r.power_w]
                            for t, r in zip(nvml.times, nvml.readings, strict=True)]
                row.update(rep=rep, position=order.index(tool), nvml=readings,
                           wall_s=round(time.perf_counter() - origin, 4))
                if row["samples_us"]:
                    row["median_us"] = statistics.median(row["samples_us"])
                runs[tool].append(row)
            print(name, rep, {t: round(runs[t][-1].get("median_us", 0), 1) for t in order},
                  flush=True)
        out[name] = runs
        del kernel
        tools.torch.cuda.empty_cache()
    return out


PLATEAU_MS = (150.0, 800.0)  # the steps' plateau; the slow episode comes after it


def episode_rows(found: dict[str, Any]) -> list[str]:
    """How far a slow episode moves a cell's statistic: over each step's samples after its
    first PLATEAU_MS[0] ms, the median and the mean against the plateau's median (ADR 0036:
    the cell's statistic is the median)."""
    rows = ["| case | step | rep | plateau µs | episode: share, slowdown | median moves "
            "| mean moves |", "| --- " * 7 + "|"]
    start, end = PLATEAU_MS
    for name, runs in found["cases"].items():
        for tool in ("step_hot", "step_cold"):
            for row in runs[tool]:
                timed = list(zip(row["t_ms"], row["samples_us"], strict=True))
                plateau = statistics.median(x for t, x in timed if start <= t < end)
                after = [x for t, x in timed if t >= start]
                episode = [x for t, x in timed if t >= end]
                rows.append(
                    f"| {name} | {tool} | {row['rep']} | {plateau:.1f} "
                    f"| {len(episode) / len(after):.0%}, "
                    f"{statistics.median(episode) / plateau - 1:+.1%} "
                    f"| {statistics.median(after) / plateau - 1:+.2%} "
                    f"| {statistics.mean(after) / plateau - 1:+.2%} |")
    return rows


def rolling_median(values: list[float], width: int) -> list[float]:
    half = width // 2
    return [statistics.median(values[max(0, i - half):i + half + 1])
            for i in range(len(values))]


def figure(found: dict[str, Any], out: Path) -> None:
    """Per case: the 1 s steps' samples against time under load (rolling median of 25),
    and each tool's samples against its sample index, one line per repetition."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = found["cases"]
    fig, axes = plt.subplots(len(cases), 2, figsize=(13, 4.2 * len(cases)), squeeze=False)
    colors = {"do_bench": "tab:red", "event_write": "tab:blue", "loop_write": "tab:orange",
              "step_hot": "tab:purple", "step_cold": "tab:green"}
    for (name, runs), (steps, tools) in zip(cases.items(), axes, strict=True):
        for tool in ("step_hot", "step_cold"):
            for i, row in enumerate(runs[tool]):
                steps.plot(row["t_ms"], rolling_median(row["samples_us"], 25), lw=0.8,
                           color=colors[tool], alpha=0.8, label=tool if i == 0 else None)
        steps.set(title=f"{name}: 1 s of flush + kernel back to back", xlabel="ms under load",
                  ylabel="sample µs (rolling median of 25)")
        for tool in TOOLS:
            for i, row in enumerate(runs[tool]):
                if row["samples_us"]:
                    tools.plot(rolling_median(row["samples_us"], 15), lw=0.9,
                               color=colors[tool], alpha=0.85,
                               label=f"{tool}" if i == 0 else None)
        tools.set(title=f"{name}: each tool's samples in order (one line a repetition)",
                  xlabel="sample", ylabel="µs (rolling median of 15)")
        for ax in (steps, tools):
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("series.json"))
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--figure", type=Path, nargs=2, metavar=("JSON", "PNG"),
                        help="draw a recorded series (JSON, or .json.gz) and exit")
    args = parser.parse_args()
    if args.figure:
        from kernbench.results.jsonio import read_json

        found = read_json(args.figure[0])
        figure(found, args.figure[1])
        print("\n".join(episode_rows(found)))
        return
    import triton.testing

    cases = measure(args.cases, args.reps)
    found = {"do_bench_source": inspect.getsource(triton.testing.do_bench),
             "settings": {"reps": args.reps, "step_s": STEP_S, "cold_idle_s": COLD_IDLE_S,
                          "precondition_s": fidelity_tools.PRECONDITION_S,
                          "spec": fidelity_tools.SPEC, "do_bench_ms": fidelity_tools.DO_BENCH_MS},
             "cases": cases}
    args.out.write_text(json.dumps(found))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
