"""How well a GEMM sweep's numbers hold: round to round, and between two sweeps.

    python scripts/round_spread.py RESULTS [--against OTHER] [--min-us 20] [--out FILE]

For the resident and Triton cells whose median is at least `--min-us`, prints the spread
of each cell's round medians (max / min - 1: median, 90th percentile, maximum, the worst
cells) and, with `--against`, how far each cell's median moved between the two files
(the share within 2% and 5%, the worst cells). Both files are results.json or
results.json.xz as kernbench writes them; `--out` writes the same numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from kernbench.results.model import Results, load
from kernbench.timing.steady import round_spread

VARIANTS = ("resident", "triton")


def cell_medians(results: Results, min_s: float) -> dict[str, list[float]]:
    """Each selected cell's round medians, by cell id."""
    chosen: dict[str, list[float]] = {}
    for cell in results.cells:
        rounds = [r.median_s for r in cell.rounds if r.status == "ok" and r.median_s]
        if cell.variant not in VARIANTS or not rounds:
            continue
        if statistics.median(rounds) >= min_s:
            chosen[cell.id] = rounds
    return chosen


def spread_summary(medians: dict[str, list[float]]) -> dict[str, Any] | None:
    """The spread of the cells measured in two rounds or more; None if there are none."""
    found = {cid: round_spread(r) for cid, r in medians.items()}
    spreads = {cid: spread for cid, spread in found.items() if spread is not None}
    values = list(spreads.values())
    if not values:
        return None
    worst = sorted(spreads.items(), key=lambda item: -item[1])[:5]
    return {
        "cells": len(values),
        "median": statistics.median(values),
        "p90": statistics.quantiles(values, n=10, method="inclusive")[8],
        "max": max(values),
        "worst": [
            {"id": cid, "spread": s, "rounds_us": [m * 1e6 for m in medians[cid]]}
            for cid, s in worst
        ],
    }


def moved_summary(a: dict[str, list[float]], b: dict[str, list[float]]) -> dict[str, Any]:
    common = sorted(set(a) & set(b))
    moved = {cid: statistics.median(b[cid]) / statistics.median(a[cid]) - 1 for cid in common}
    values = [abs(v) for v in moved.values()]
    worst = sorted(moved.items(), key=lambda item: -abs(item[1]))[:5]
    return {
        "cells": len(common),
        "within_2pct": sum(v <= 0.02 for v in values) / len(values),
        "within_5pct": sum(v <= 0.05 for v in values) / len(values),
        "over_5pct": sum(v > 0.05 for v in values),
        "median_abs": statistics.median(values),
        "worst": [{"id": cid, "moved": m} for cid, m in worst],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--against", type=Path)
    parser.add_argument("--min-us", type=float, default=20.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    min_s = args.min_us * 1e-6
    mine = cell_medians(load(args.results), min_s)
    report: dict[str, Any] = {"results": str(args.results), "min_us": args.min_us}
    report["round_spread"] = spread = spread_summary(mine)
    if spread is None:
        print("round-to-round spread: no cell measured in two rounds")
    else:
        print(
            f"round-to-round spread over {spread['cells']} cells >= {args.min_us:g} us: "
            f"median {spread['median']:.2%}, p90 {spread['p90']:.2%}, max {spread['max']:.2%}"
        )
        for worst in spread["worst"]:
            rounds = " / ".join(f"{us:.1f}" for us in worst["rounds_us"])
            print(f"  {worst['id']}: {worst['spread']:.2%} ({rounds} us)")
    if args.against:
        report["against"] = str(args.against)
        report["moved"] = moved_summary(cell_medians(load(args.against), min_s), mine)
        moved = report["moved"]
        print(
            f"against {args.against}: {moved['cells']} cells, "
            f"{moved['within_2pct']:.0%} within 2%, {moved['within_5pct']:.0%} within 5%, "
            f"{moved['over_5pct']} over 5%, median |change| {moved['median_abs']:.2%}"
        )
        for worst in moved["worst"]:
            print(f"  {worst['id']}: {worst['moved']:+.2%}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
