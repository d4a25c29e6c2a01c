"""The fidelity page from its JSON alone: ncu's launches read into cases, each case
summed up against the others, and the markdown. No torch and no GPU: the tests and
`scripts/fidelity.py --render` rebuild a page anywhere; `scripts/fidelity.py` measures.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

EMPTY_CASE = "empty-0"
TARGET = 0.01  # the agreement asked for
ISOLATED_TARGET = 0.02  # isolated duty against ncu's single launches
MIN_KERNEL_S = 20e-6  # ... for kernels at least this long
CLOCK_MATCH_MHZ = 15.0
NCU_CALLS = 5  # profiled calls per case
NCU_CACHE = ("all", "none")
NCU_TIME = "gpu__time_duration.sum"
NCU_CLOCK = "sm__cycles_elapsed.avg.per_second"
MARKER = "FillFunctor"  # the kernel of marker.fill_(): splits the ncu launches into cases
GAP_TOOLS = ("isolated_cupti", "isolated_cupti_10ms", "isolated_cupti_50ms")  # (--also)
# The sustained variants the bisect table sets against do_bench (Tools' methods in
# fidelity.py, run with --also).
BISECT_TOOLS = ("event_write", "event_write_deep", "event_write_burst", "loop_write",
                "loop_write_synced_warmup", "do_bench_again", "event_write_unsettled",
                "do_bench_nowarmup")
UNIT_SECONDS = {
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
}  # fmt: skip
UNIT_MHZ = {
    "cycle/nsecond": 1e3, "cycle/usecond": 1.0, "cycle/msecond": 1e-3, "cycle/second": 1e-6,
    "ghz": 1e3, "mhz": 1.0, "khz": 1e-3, "hz": 1e-6,
}  # fmt: skip


# -- ncu's launches ----------------------------------------------------------------------


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """One row per profiled launch, in launch order: id, kernel, and each metric as
    (value, unit) exactly as ncu printed it."""
    start = text.find('"ID"')
    if start < 0:
        return []
    launches: dict[int, dict[str, Any]] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        launch = launches.setdefault(int(row["ID"]), {"kernel": row["Kernel Name"]})
        launch[row["Metric Name"]] = [row["Metric Value"], row["Metric Unit"]]
    return [{"id": i, **launches[i]} for i in sorted(launches)]


def ncu_value(pair: Sequence[str] | None, units: dict[str, float]) -> float | None:
    """A metric in seconds or MHz (per `units`); None when absent or in an unknown unit."""
    if not pair:
        return None
    value, unit = pair
    scale = units.get(unit.strip().lower())
    return None if scale is None else float(value.replace(",", "")) * scale


def split_cases(launches: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Launches after each marker belong to the next case; each case's launches are grouped
    into NCU_CALLS calls of equal length (cuBLAS may launch more than one kernel a call)."""
    segments: list[list[dict[str, Any]]] = []
    for launch in launches:
        if MARKER in launch["kernel"]:
            segments.append([])
        elif segments:
            segments[-1].append(launch)
    if len(segments) != len(names):
        return {"error": f"{len(segments)} markers for {len(names)} cases"}
    return {name: case_calls(segment) for name, segment in zip(names, segments, strict=True)}


def case_calls(segment: list[dict[str, Any]]) -> dict[str, Any]:
    if not segment or len(segment) % NCU_CALLS:
        return {"error": f"{len(segment)} launches for {NCU_CALLS} calls"}
    per_call = len(segment) // NCU_CALLS
    calls_s, clocks = [], []
    for i in range(NCU_CALLS):
        call = segment[i * per_call : (i + 1) * per_call]
        seconds = [ncu_value(k.get(NCU_TIME), UNIT_SECONDS) for k in call]
        mhz = [ncu_value(k.get(NCU_CLOCK), UNIT_MHZ) for k in call]
        if None in seconds:
            return {"error": f"unreadable {NCU_TIME}: {call[0].get(NCU_TIME)}"}
        calls_s.append(sum(seconds))
        if None not in mhz:  # the call's clock, weighted by its kernels' times
            clocks.append(sum(s * f for s, f in zip(seconds, mhz, strict=True)) / sum(seconds))
    return {
        "median_s": statistics.median(calls_s),
        "calls_s": calls_s,
        "clock_mhz": statistics.median(clocks) if clocks else None,
        "kernels_per_call": per_call,
        "kernel": segment[0]["kernel"][:120],
    }


def ncu_cases(ncu: dict[str, Any], names: list[str]) -> dict[str, dict[str, Any]]:
    """{cache: {case: numbers}} from the raw launches, so a parsing fix needs no GPU run."""
    out = {}
    for cache in NCU_CACHE:
        raw = ncu.get(cache, {})
        out[cache] = split_cases(raw["launches"], names) if "launches" in raw else raw
    return out


# -- summaries (pure: the .md is rebuilt from the JSON alone) --------------------------------


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


def ncu_errors(found: dict[str, Any]) -> list[str]:
    errors = [found["error"]] if isinstance(found.get("error"), str) else []
    cases = [(name, v) for name, v in found.items() if isinstance(v, dict) and "error" in v]
    return errors + [f"{name}: {v['error']}" for name, v in cases]


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


def fmt_us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.2f}"


def fmt_ratio(summary: dict[str, float] | float | None) -> str:
    if summary is None:
        return "-"
    if isinstance(summary, float):
        return f"{summary:.3f}"
    return f"{summary['ratio']:.3f} ({summary['low']:.3f}-{summary['high']:.3f})"


def fmt_mhz(mhz: float | None) -> str:
    return "-" if mhz is None else f"{mhz:.0f}"


def fmt_pct(x: float) -> str:
    return f"{x * 100:.2f}%"


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A markdown table: the header, its separator, a line per row."""
    return [f"| {' | '.join(header)} |", "| --- " * len(header) + "|",
            *(f"| {' | '.join(row)} |" for row in rows)]


def main_table(rows: list[dict[str, Any]]) -> list[str]:
    header = ["case", "kernel µs", "auto timer", "event read µs", "event write µs",
              "graph read µs", "do_bench µs", "write / do_bench", "read / do_bench",
              "graph / event", "max tool spread", "SM MHz event / do_bench"]
    return md_table(header, (
        [row["case"], fmt_us(row["kernel_s"]), row["auto_timer"],
         *(fmt_us(median_of(row, t)) for t in ("event_read", "event_write", "graph_read",
                                                "do_bench")),
         fmt_ratio(row["write_vs_do_bench"]), fmt_ratio(row["read_vs_do_bench"]),
         fmt_ratio(row["graph_vs_event"]),
         fmt_pct(max(t["spread"] for t in row["tools"].values())),
         f"{fmt_mhz(row['clock_mhz'].get('event_read'))} / "
         f"{fmt_mhz(row['clock_mhz'].get('do_bench'))}"]
        for row in rows))


def ncu_table(rows: list[dict[str, Any]]) -> list[str]:
    """ncu's clock is the SM clock averaged over the kernel; the NVML clock is a reading every
    few ms, which stays at the boost clock while short kernels run slower: cycle ratios from
    it would mislead, so the table gives times."""
    header = ["case", "ncu all µs", "ncu none µs", "ncu in-kernel SM MHz",
              "event read µs @ NVML MHz", "event / ncu", "graph / ncu", "do_bench / ncu",
              "isolated / ncu", "cupti / ncu"]
    lines = []
    for row in rows:
        if "vs_ncu" not in row:
            continue
        got, ncu = row["vs_ncu"], row["ncu_all"]
        bench = median_of(row, "do_bench")
        lines.append([
            row["case"], fmt_us(ncu["median_s"]),
            fmt_us(row.get("ncu_none", {}).get("median_s")), fmt_mhz(ncu["clock_mhz"]),
            f"{fmt_us(median_of(row, 'event_read'))} @ "
            f"{fmt_mhz(row['clock_mhz'].get('event_read'))}",
            fmt_ratio(got["event"]), fmt_ratio(got["graph"]),
            fmt_ratio(bench / ncu["median_s"] if bench else None),
            fmt_ratio(got.get("isolated")), fmt_ratio(got.get("cupti")),
        ])
    return md_table(header, lines)


def gap_table(rows: list[dict[str, Any]]) -> list[str]:
    """CUPTI's isolated samples behind longer idle gaps against ncu, where a run had them."""
    if not any(median_of(row, "isolated_cupti_50ms") for row in rows if "tools" in row):
        return []
    table = md_table(["case", "ncu all", *GAP_TOOLS], (
        [row["case"], fmt_us(row["ncu_all"]["median_s"]),
         *(f"{fmt_us(median_of(row, tool))} ({fmt_ratio(row['vs_ncu'].get(key))})"
           for tool, key in zip(GAP_TOOLS, ("cupti", "cupti_10ms", "cupti_50ms"), strict=True))]
        for row in rows if "vs_ncu" in row))
    return ["## The isolated gap against ncu (CUPTI's samples, µs, and / ncu)", "", *table, ""]


def bisect_table(rows: list[dict[str, Any]]) -> list[str]:
    """Each sustained variant against do_bench, where a run had the bisecting tools."""
    tools = [t for t in BISECT_TOOLS if any(t in r.get("bisect", {}) for r in rows)]
    if not set(tools) - {"event_write", "loop_write"}:
        return []
    table = md_table(["case", *tools], (
        [row["case"], *(fmt_ratio(row.get("bisect", {}).get(t)) for t in tools)] for row in rows))
    return ["## Bisecting the sustained timer against do_bench (tool / do_bench)", "",
            *table, ""]


def gaps_table(rows: list[dict[str, Any]]) -> list[str]:
    """What separates sustained batches on the GPU, against what separates two samples of
    do_bench's loop (its flush): more means the card rested between batches."""
    header = ["case", "event write: between batches µs (max)",
              "batches that found the GPU idle",
              "batches the GPU reached before they were queued",
              "do_bench's loop: between samples µs", "event read: between batches µs"]
    lines = []
    for row in rows:
        gaps = row.get("gaps", {})
        if not gaps:
            continue
        write, read, loop = (gaps.get(t, {}) for t in ("event_write", "event_read", "loop_write"))
        lines.append([
            row["case"], f"{fmt_us(write.get('between_batches_s'))} "
            f"({fmt_us(write.get('max_between_batches_s'))})",
            write.get("batches_found_gpu_idle", "-"), write.get("batches_past_hold", "-"),
            fmt_us(loop.get("between_samples_s")), fmt_us(read.get("between_batches_s")),
        ])
    return md_table(header, lines) if lines else []


def small_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in rows:
        if "graph_warm" not in row["tools"]:
            continue
        ncu = row.get("ncu_all", {}).get("median_s")
        lines += [
            f"### {row['case']} (under {MIN_KERNEL_S * 1e6:.0f} µs: outside the 1% target)",
            "",
            *md_table(["tool", "µs", "L2"], [
                ["kernbench event", fmt_us(median_of(row, "event_read")), "cold"],
                ["kernbench graph", fmt_us(median_of(row, "graph_read")), "cold"],
                ["kernbench graph", fmt_us(median_of(row, "graph_warm")), "warm"],
                ["do_bench", fmt_us(median_of(row, "do_bench")), "cold (write flush)"],
                ["do_bench_cudagraph", fmt_us(median_of(row, "do_bench_cudagraph")),
                 "warm (no flush)"],
                ["ncu", fmt_us(ncu), "cold (--cache-control all)"],
                ["ncu", fmt_us(row.get("ncu_none", {}).get("median_s")), "--cache-control none"],
            ]),
            "",
        ]
    return lines


def span(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}" if values else "-"


def reached(rows: list[dict[str, Any]]) -> str:
    """The 'what was reached' paragraph, from the numbers."""
    long = [r for r in rows if r["kernel_s"] >= MIN_KERNEL_S]
    if not long:
        return "No case ran 20 µs or longer."
    met = [r["case"] for r in long if within(r["write_vs_do_bench"])]
    missed = [r["case"] for r in long if not within(r["write_vs_do_bench"])]
    write = [r["write_vs_do_bench"]["ratio"] for r in long if r["write_vs_do_bench"]]
    read = [r["read_vs_do_bench"]["ratio"] for r in long if r["read_vs_do_bench"]]
    spreads = [r["write_vs_do_bench"]["spread"] for r in long if r["write_vs_do_bench"]] or [0.0]
    text = [
        f"Kernels of 20 µs and more (n = {len(long)}): kernbench's event timer with do_bench's "
        f"flush agrees with do_bench at {span(write)} (largest per-repetition spread of the "
        f"ratio {fmt_pct(max(spreads))}); within 1% with a spread under 1%: "
        f"{', '.join(met) or 'none'}" + (f"; not: {', '.join(missed)}." if missed else "."),
        f"With its own read flush the ratio is {span(read)}: the difference between the two "
        "is the flush policy (do_bench's dirty lines are written back inside the timed "
        "kernel), not the timer.",
    ]
    loop = [r["loop_vs_do_bench"]["ratio"] for r in long if r.get("loop_vs_do_bench")]
    unsettled = [r["unsettled_vs_do_bench"]["ratio"] for r in long
                 if r.get("unsettled_vs_do_bench")]
    if loop or unsettled:
        text.append(
            f"Bisecting write / do_bench: do_bench's own loop with kernbench's flush and "
            f"events / do_bench {span(loop)}; kernbench's timer without its settle phase / "
            f"do_bench {span(unsettled)}."
        )
    settled = [r["write_vs_settled_do_bench"]["ratio"] for r in long
               if r.get("write_vs_settled_do_bench")]
    longer = [r["write_vs_long_do_bench"]["ratio"] for r in long
              if r.get("write_vs_long_do_bench")]
    if settled or longer:
        either = [r["case"] for r in long
                  if within(r.get("write_vs_settled_do_bench")) or within(
                      r.get("write_vs_long_do_bench"))]
        text.append(
            f"Against do_bench in kernbench's power state: behind the same settle phase "
            f"{span(settled)}, sampling over kernbench's whole window {span(longer)}; within "
            f"1% with a spread under 1% on either: {', '.join(either) or 'none'}."
        )
    same = [r for r in long if r.get("write_vs_nowarmup_do_bench")]
    if same:
        ratios = [r["write_vs_nowarmup_do_bench"]["ratio"] for r in same]
        close = [r["case"] for r in same
                 if abs(r["write_vs_nowarmup_do_bench"]["ratio"] - 1) <= TARGET]
        text.append(
            f"Against do_bench started from the same state (its warm-up, which leaves its "
            f"first samples slow, left out): {span(ratios)}; medians within 1%: "
            f"{', '.join(close) or 'none'}."
        )
    empty = next((r for r in rows if r["case"] == EMPTY_CASE), None)
    if empty is not None:
        text.append(
            f"An empty kernel reads {fmt_us(median_of(empty, 'event_read'))} µs by the event "
            f"timer, {fmt_us(median_of(empty, 'isolated_read'))} µs isolated and "
            f"{fmt_us(empty.get('ncu_all', {}).get('median_s'))} µs by ncu: what events and "
            "a launch add around any kernel, against ncu's kernel duration alone."
        )
    with_ncu = [r for r in long if "vs_ncu" in r]
    if with_ncu:
        ev = [r["vs_ncu"]["event"] for r in with_ncu if r["vs_ncu"]["event"]]
        gr = [r["vs_ncu"]["graph"] for r in with_ncu if r["vs_ncu"]["graph"]]
        mhz = [r["ncu_all"]["clock_mhz"] for r in with_ncu if r["ncu_all"]["clock_mhz"]]
        ok = [r["case"] for r in with_ncu if abs((r["vs_ncu"]["event"] or 0) - 1) <= TARGET]
        iso = [r["vs_ncu"].get("isolated") for r in with_ncu if r["vs_ncu"].get("isolated")]
        iso_ok = [
            r["case"] for r in with_ncu
            if abs((r["vs_ncu"].get("isolated") or 0) - 1) <= ISOLATED_TARGET
        ]
        if iso:
            text.append(
                f"The isolated duty (an idle gap before each sample) against ncu: {span(iso)}; "
                f"within {ISOLATED_TARGET:.0%}: {', '.join(iso_ok) or 'none'}."
            )
        cupti = [r["vs_ncu"].get("cupti") for r in with_ncu if r["vs_ncu"].get("cupti")]
        cupti_ok = [r["case"] for r in with_ncu
                    if abs((r["vs_ncu"].get("cupti") or 0) - 1) <= ISOLATED_TARGET]
        if cupti:
            text.append(
                f"The isolated duty timed by CUPTI's kernel records (the timer `auto` gives "
                f"isolated cells) against ncu: {span(cupti)}; within {ISOLATED_TARGET:.0%}: "
                f"{', '.join(cupti_ok) or 'none'}."
            )
        text.append(
            f"Against ncu's isolated cold launches: event/ncu {span(ev)}, graph/ncu {span(gr)}, "
            f"ncu's launches ran at {fmt_mhz(min(mhz, default=None))}-"
            f"{fmt_mhz(max(mhz, default=None))} MHz in-kernel; event within 1% of ncu: "
            f"{', '.join(ok) or 'none'}."
        )
    else:
        text.append("ncu gave no numbers in this run.")
    return " ".join(text)


def precondition_text(data: dict[str, Any]) -> str:
    seconds = data["settings"].get("precondition_s")
    if not seconds:
        return ", each tool in the state the tool before it left"
    idle = data["settings"].get("precondition_idle_s")
    if idle:
        return (f", each tool behind {idle:g} s idle and then {seconds:g} s of do_bench's flush "
                f"and the kernel back to back (an isolated tool: the idle alone)")
    return (f", each tool behind {seconds:g} s of do_bench's flush and the kernel back to back "
            f"(an isolated tool: {seconds:g} s idle)")


def markdown(data: dict[str, Any]) -> str:
    meta, names = data["provenance"], data["settings"]["cases"]
    ncu = ncu_cases(data.get("ncu", {}), names)
    rows = [
        summarize(name, data["cases"][name], ncu) for name in names if "runs" in data["cases"][name]
    ]
    failed = [
        f"- {name}: {case['error']}" for name, case in data["cases"].items() if "error" in case
    ]
    failed += [
        f"- {name}, {tool}: {error}"
        for name, case in data["cases"].items()
        for tool, error in case.get("tool_errors", {}).items()
    ]
    lines = [
        "# kernbench timer fidelity",
        "",
        f"{meta['gpu']}, driver {meta['driver']}, torch {meta['torch']} (CUDA {meta['cuda']}), "
        f"triton {meta['triton']}, {meta['date']}; {data['settings']['reps']} interleaved "
        "repetitions per case, order reversed every other one" + precondition_text(data)
        + ". Ratios: median of repetition medians, with the per-repetition range in "
        "brackets. All cold L2 unless marked.",
        "",
        "## What was reached",
        "",
        reached(rows),
        "",
        "## kernbench against do_bench (same process, interleaved)",
        "",
        *main_table(rows),
        "",
        "## kernbench against ncu (isolated launches, --clock-control none)",
        "",
        *ncu_table(rows),
        *gap_table(rows),
        "",
        *bisect_table(rows),
        "## Sustained batches: what runs between them on the GPU",
        "",
        *(gaps_table(rows) or ["No gaps recorded (a run before they were)."]),
        "",
        *small_table(rows),
        "## Flushes",
        "",
        *[f"- {tool}: {how}" for tool, how in sorted(meta["flush"].items())],
    ]
    for cache in NCU_CACHE:
        errors = ncu_errors(ncu[cache]) if cache in ncu else []
        if errors:
            lines += ["", f"ncu --cache-control {cache}: {'; '.join(errors)}"]
    if failed:
        lines += ["", "## Failed cases", "", *failed]
    return "\n".join(lines) + "\n"


def write(out: Path, data: dict[str, Any]) -> str:
    from kernbench.results.jsonio import write_json

    write_json(out, data)
    text = markdown(data)
    out.with_suffix(".md").write_text(text)
    return text
