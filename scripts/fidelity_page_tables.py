"""The fidelity page's tables, each a list of markdown lines from the summed-up cases
(`fidelity_summary.summarize`), and the formats of their numbers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fidelity_summary import BISECT_TOOLS, MIN_KERNEL_S, median_of

GAP_TOOLS = ("isolated_cupti", "isolated_cupti_10ms", "isolated_cupti_50ms")  # (--also)


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
