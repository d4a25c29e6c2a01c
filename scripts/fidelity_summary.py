"""One case of the fidelity page summed up from its JSON: each tool's median of repetition
medians, the ratios between tools with their per-repetition spread, and the case against
ncu, in time and in SM cycles. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from fidelity_ncu import NCU_CACHE

TARGET = 0.01  # the agreement asked for
ISOLATED_TARGET = 0.02  # isolated duty against ncu's single launches
MIN_KERNEL_S = 20e-6  # ... for kernels at least this long
CLOCK_MATCH_MHZ = 15.0
# The sustained variants the bisect table sets against do_bench (Tools' methods in
# fidelity_tools.py, run with --also).
BISECT_TOOLS = ("event_write", "event_write_deep", "event_write_burst", "loop_write",
                "loop_write_synced_warmup", "do_bench_again", "event_write_unsettled",
                "do_bench_nowarmup")


def rep_stats(values: Sequence[float]) -> dict[str, float]:
    """Median of repetition medians, and their spread (max - min) relative to it."""
    mid = statistics.median(values)
    return {"median": mid, "spread": (max(values) - min(values)) / mid}


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """a/b from the medians of repetition medians, and the spread of the per-repetition
    ratios (each taken a few hundred ms apart, in the same clock state)."""
    per_rep = [x / y for x, y in zip(a, b, strict=True)]
    return {
        "ratio": statistics.median(a) / statistics.median(b),
        "spread": max(per_rep) - min(per_rep),
        "low": min(per_rep),
        "high": max(per_rep),
    }


def within(summary: dict[str, float] | None, target: float = TARGET) -> bool:
    """Agreement within `target`, backed by a repetition spread under it."""
    if not summary:
        return False
    return abs(summary["ratio"] - 1) <= target and summary.get("spread", 0.0) < target


def cycles_ratio(t_a: float, mhz_a: float | None, t_b: float, mhz_b: float | None) -> float | None:
    """(t_a x f_a) / (t_b x f_b): the ratio in SM cycles, for kernels bound by SM clock."""
    if not mhz_a or not mhz_b:
        return None
    return (t_a * mhz_a) / (t_b * mhz_b)


def at_clock(runs: list[dict[str, Any]], mhz: float | None) -> float | None:
    """Median of the event timer's per-clock medians read within CLOCK_MATCH_MHZ of `mhz`."""
    if mhz is None:
        return None
    near = [
        seconds
        for run in runs
        for clock, (seconds, _) in run.get("by_clock", {}).items()
        if abs(float(clock) - mhz) <= CLOCK_MATCH_MHZ
    ]
    return statistics.median(near) if near else None


def summarize(name: str, case: dict[str, Any], ncu: dict[str, Any]) -> dict[str, Any]:
    """One case's numbers; `ncu` as ncu_cases gives it."""
    runs = case["runs"]
    series = {tool: [r["median_s"] for r in rows] for tool, rows in runs.items()}
    clocks = {
        tool: [r["clock_mhz"] for r in rows if r.get("clock_mhz")] for tool, rows in runs.items()
    }
    out: dict[str, Any] = {
        "case": name,
        "auto_timer": case["auto_timer"],
        "tools": {tool: rep_stats(v) for tool, v in series.items()},
        "clock_mhz": {tool: statistics.median(v) if v else None for tool, v in clocks.items()},
        "write_vs_do_bench": pair(series, "event_write", "do_bench"),
        "read_vs_do_bench": pair(series, "event_read", "do_bench"),
        "graph_vs_event": pair(series, "graph_read", "event_read"),
        "graph_warm_vs_cudagraph": pair(series, "graph_warm", "do_bench_cudagraph"),
        "isolated_vs_event": pair(series, "isolated_read", "event_read"),
        "loop_vs_do_bench": pair(series, "loop_write", "do_bench"),
        "unsettled_vs_do_bench": pair(series, "event_write_unsettled", "do_bench"),
        "write_vs_settled_do_bench": pair(series, "event_write", "do_bench_settled"),
        "write_vs_long_do_bench": pair(series, "event_write", "do_bench_long"),
        "write_vs_nowarmup_do_bench": pair(series, "event_write", "do_bench_nowarmup"),
        "bisect": {tool: pair(series, tool, "do_bench") for tool in BISECT_TOOLS
                   if tool in series},
    }
    out["kernel_s"] = median_of(out, "do_bench") or median_of(out, "event_read")
    out["gaps"] = {tool: gap_medians(runs[tool]) for tool in ("event_write", "event_read",
                                                              "loop_write") if tool in runs}
    for cache in NCU_CACHE:
        found = ncu.get(cache, {}).get(name)
        if isinstance(found, dict) and "median_s" in found:
            out[f"ncu_{cache}"] = found
    if "ncu_all" in out:
        out["vs_ncu"] = vs_ncu(out, runs.get("event_read", []))
    return out


def gap_medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Over a tool's repetitions: the median of each gap it recorded, the idle counts summed."""
    out: dict[str, Any] = {}
    for key in ("between_batches_s", "max_between_batches_s", "between_samples_s"):
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            out[key] = statistics.median(values)
    for key in ("batches_found_gpu_idle", "batches_past_hold"):
        counts = [r[key].split(" of ") for r in runs if r.get(key)]
        if counts:
            out[key] = f"{sum(int(a) for a, _ in counts)} of {sum(int(b) for _, b in counts)}"
    return out


def pair(series: dict[str, list[float]], a: str, b: str) -> dict[str, float] | None:
    return paired_ratio(series[a], series[b]) if a in series and b in series else None


def median_of(row: dict[str, Any], tool: str) -> float | None:
    found = row["tools"].get(tool)
    return found["median"] if found else None


def vs_ncu(row: dict[str, Any], event_runs: list[dict[str, Any]]) -> dict[str, Any]:
    ncu_s, ncu_mhz = row["ncu_all"]["median_s"], row["ncu_all"]["clock_mhz"]
    out: dict[str, Any] = {}
    for tool, name in (("event", "event_read"), ("graph", "graph_read"),
                       ("isolated", "isolated_read"), ("cupti", "isolated_cupti"),
                       ("cupti_10ms", "isolated_cupti_10ms"),
                       ("cupti_50ms", "isolated_cupti_50ms")):
        seconds = median_of(row, name)
        mhz = row["clock_mhz"].get(name)
        out[tool] = seconds / ncu_s if seconds else None
        out[f"{tool}_cycles"] = cycles_ratio(seconds, mhz, ncu_s, ncu_mhz) if seconds else None
    matched = at_clock(event_runs, ncu_mhz)
    out["event_at_ncu_clock"] = matched / ncu_s if matched else None
    return out
