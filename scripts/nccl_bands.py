"""kernbench against several nccl-tests flavours at once, band by band.

Reads the JSON reports `scripts/nccl_compare.py --out-json` writes, one per flavour (eager,
`-G`, a thread per GPU...), and prints, for each size band, each report's range of
kernbench / nccl-tests ratios and how many cells are within issue 17's target (10% below
64 KiB, 3% from there), then the ratios size by size side by side.

    python3 scripts/nccl_bands.py --report eager=compare-cold_mpi.json \
        --report -G=compare-cold_mpi_graph.json --out-md bands.md
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from kernbench.units import format_bytes

KIB, MIB = 1 << 10, 1 << 20
# (name, first size, past the last size, target)
BANDS = (
    ("below 64 KiB", 0, 64 * KIB, 0.10),
    ("64-512 KiB", 64 * KIB, MIB, 0.03),
    ("1-16 MiB", MIB, 32 * MIB, 0.03),
    ("32 MiB-1 GiB", 32 * MIB, 1 << 31, 0.03),
)


def band_cells(rows: list[dict[str, Any]], low: int, high: int, target: float) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rows if low <= r["bytes"] < high]
    if not ratios:
        return {"cells": 0}
    return {
        "cells": len(ratios),
        "within": sum(abs(r - 1) <= target for r in ratios),
        "low": min(ratios),
        "high": max(ratios),
        "median": statistics.median(ratios),
    }


def bands(reports: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{report name: {band name: its cells}}."""
    return {
        name: {band: band_cells(report["rows"], low, high, target)
               for band, low, high, target in BANDS}
        for name, report in reports.items()
    }


def band_text(cell: dict[str, Any]) -> str:
    if not cell["cells"]:
        return "-"
    return (f"{cell['low']:.3f}-{cell['high']:.3f}, median {cell['median']:.3f} "
            f"({cell['within']}/{cell['cells']})")


def markdown(reports: dict[str, dict[str, Any]]) -> str:
    found = bands(reports)
    names = list(reports)
    lines = [
        "kernbench / nccl-tests; in brackets the cells within the target (10% below 64 KiB, "
        "3% from there).",
        "",
        "| reference | " + " | ".join(band for band, *_ in BANDS) + " |",
        "| --- " * (len(BANDS) + 1) + "|",
    ]
    lines += [f"| {name} | " + " | ".join(band_text(found[name][band]) for band, *_ in BANDS)
              + " |" for name in names]
    keys: dict[tuple[str, int, bool], dict[str, float]] = {}
    for name, report in reports.items():
        for row in report["rows"]:
            keys.setdefault((row["op"], row["bytes"], row["inplace"]), {})[name] = row["ratio"]
    lines += ["", "| op | size | placement | " + " | ".join(names) + " |",
              "| --- " * (len(names) + 3) + "|"]
    for (op, size, inplace), ratios in keys.items():
        shown = " | ".join(f"{ratios[n]:.3f}" if n in ratios else "-" for n in names)
        lines.append(f"| {op} | {format_bytes(size)} | {'in' if inplace else 'out of'} place "
                     f"| {shown} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="append", required=True,
                        help="NAME=compare.json (repeatable, in the columns' order)")
    parser.add_argument("--out-md", type=Path)
    args = parser.parse_args()
    reports = {}
    for item in args.report:
        name, sep, path = item.partition("=")
        if not sep:
            parser.error(f"--report {item!r}: give NAME=PATH")
        reports[name] = json.loads(Path(path).read_text())
    text = markdown(reports)
    print(text)
    if args.out_md:
        args.out_md.write_text(text)


if __name__ == "__main__":
    main()
