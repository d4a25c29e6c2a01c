"""A cell's recorded time series, block by block, and what a slow episode does to its
statistic.

    python scripts/block_series.py RESULTS CELL_ID [--out FIGURE.png]

For each round of the cell: its blocks (median, SM clock, power, clock-event reasons)
in the order taken, and three statistics of the round's samples: the median (kernbench's),
the mean, and the median without the round's slowest block. A statistic robust to a slow
episode moves little when that block goes; the mean moves by the block's share times its
slowdown. The figure draws each block's median against its place in the round, with the
SM clock on a second axis.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from kernbench.results.model import RoundResult, load


def without_slowest_block(round_: RoundResult) -> list[float]:
    """The round's samples less those of its slowest block (blocks hold them in order)."""
    samples, kept, start = round_.samples_s, [], 0
    slowest = max(range(len(round_.blocks)), key=lambda i: round_.blocks[i]["median_s"])
    for i, block in enumerate(round_.blocks):
        end = start + block["samples"]
        if i != slowest:
            kept.extend(samples[start:end])
        start = end
    kept.extend(samples[start:])  # samples past the last block (none when blocks cover all)
    return kept


def round_statistics(round_: RoundResult) -> dict[str, Any]:
    samples = round_.samples_s
    trimmed = without_slowest_block(round_) if len(round_.blocks) > 1 else samples
    return {
        "round": round_.round,
        "blocks": len(round_.blocks),
        "median_us": statistics.median(samples) * 1e6,
        "mean_us": statistics.fmean(samples) * 1e6,
        "median_without_slowest_us": statistics.median(trimmed) * 1e6,
    }


def draw(rounds: list[RoundResult], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(8, 3.5))
    clock_ax = ax.twinx()
    for round_ in rounds:
        xs = range(len(round_.blocks))
        median_us = statistics.median(round_.samples_s) * 1e6
        ax.plot(xs, [b["median_s"] * 1e6 for b in round_.blocks], "o-",
                label=f"round {round_.round} (median {median_us:.1f} µs)")
        clocks = [b.get("sm_clock_mhz") for b in round_.blocks]
        if any(clocks):
            clock_ax.plot(xs, clocks, ":", alpha=0.5)
    ax.set_xlabel("block, in the order taken")
    ax.set_ylabel("block median (µs)")
    clock_ax.set_ylabel("SM clock, MHz (dotted)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("cell")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = load(args.results)
    cell = next((c for c in results.cells if c.id == args.cell), None)
    if cell is None:
        raise SystemExit(f"{args.results}: no cell {args.cell!r}")
    rounds = [r for r in cell.rounds if r.status == "ok" and r.blocks]
    for round_ in rounds:
        print(round_statistics(round_))
        for block in round_.blocks:
            reasons = ",".join(block.get("clock_event_reasons") or []) or "-"
            print(f"  {block['samples']:4d} x {block['median_s'] * 1e6:9.2f} µs "
                  f"{block.get('sm_clock_mhz') or '-'} MHz {block.get('power_w') or '-'} W "
                  f"{reasons}")
    if args.out:
        draw(rounds, f"{results.bench}: {cell.id}", args.out)


if __name__ == "__main__":
    main()
