"""The tables of docs/ab-schedules.md from A/B folders and a known-effect reference.

    python scripts/ab_schedules.py pack SRC DEST      # an A/B folder, ready to commit
    python scripts/ab_schedules.py table --reference REF.json NAME=FOLDER ... [--min-us 30]

`pack` copies an A/B folder without its journals, task files and lock, with each side's
results and each round's turns packed with xz (deterministic bytes) and the paths the A/B wrote
into its files made relative to its folder or the project (a side's run.json: to the
project holding DEST, the form kernbench resolves): `kernbench summarize DEST` still
rebuilds ab.json.
`table` prints, per cell, the true effect and its 95% interval (scripts/ab_reference.py)
beside each A/B's verdict, delta, interval and A/A floor, then a summary per A/B: the
median interval width of the cells whose true effect is under 0.5%, the median A/A floor,
the cells of 1% or more called in their direction, the false calls, how many true effects
fall inside the A/B's interval and how many of its intervals overlap the reference's own
(the reference is an estimate too: where both intervals are a few tenths of a point wide,
the first count misses what the second does not), and the A/B's wall time (from the
sides' status files). `--min-us` keeps the cells whose A median is at least that long.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from kernbench.ab.schedule import load_manifest
from kernbench.execute.options import PATH_FIELDS
from kernbench.results.ab import AB_FORMAT, AbCell
from kernbench.results.folder_paths import recorded_path, resolved_path
from kernbench.results.jsonio import PACKED_SUFFIXES, read_json, write_json, write_packed_json

NO_EFFECT_PCT = 0.5
CALLED_PCT = 1.0


def pack(source: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    unpacked = shutil.ignore_patterns("journal", "tasks", "logs", "run.lock")
    shutil.copytree(source, dest, ignore=unpacked)
    made_in, project = where_made(dest)
    for path in [*dest.rglob("*.json"),
                 *(p for suffix in PACKED_SUFFIXES for p in dest.rglob(f"*.json{suffix}"))]:
        data = read_json(path)
        if path.name == "run.json":
            data = side_paths(data, made_in, dest)
        data = relative(data, made_in, project)
        raw = path.suffix == ".json"
        if raw and (path.name == "results.json" or path.name.endswith("_turns.json")):
            write_packed_json(path.with_suffix(".json.xz"), data)
            path.unlink()
        elif raw:
            write_json(path, data)
        else:
            write_packed_json(path, data)


def where_made(folder: Path) -> tuple[str, str]:
    """The A/B's folder and the project's root as the machine that ran it named them: the
    folder holding the first side's pins file, and what precedes `benches/` in the
    bench's path (empty where the bench lies elsewhere). A side's paths are read as
    `kernbench` reads them (results/folder_paths.py): absolute as the machine wrote them,
    or already relative to the project holding `folder`."""
    manifest = read_json(folder / "ab-run.json")
    side_folder = folder / manifest["runs"][0]["name"]
    pins = read_json(side_folder / "run.json").get("pins")
    made_in = str(Path(resolved_path(pins, side_folder)).parent) if pins else ""
    bench = str(manifest["bench_path"])
    project = bench[:bench.rindex("/benches/")] if "/benches/" in bench else ""
    return made_in, project


def side_paths(side: dict[str, Any], made_in: str, dest: Path) -> dict[str, Any]:
    """A side's run.json with its paths inside the A/B's folder (its pins, its timers) as
    `kernbench` records them for `dest`: relative to the project holding `dest`, the one
    rule by which a side's paths are found again (not relative to the A/B's folder)."""
    for key in PATH_FIELDS:
        value = side.get(key)
        if made_in and isinstance(value, str) and value.startswith(made_in + "/"):
            side[key] = recorded_path(str(dest / value[len(made_in) + 1:]), dest)
    return side


def relative(value: Any, made_in: str, project: str) -> Any:
    """`value` with the paths inside the A/B's folder or the project made relative to
    them (the A/B's own folder becomes "."), so committed data names no machine's paths."""
    if isinstance(value, dict):
        return {key: relative(item, made_in, project) for key, item in value.items()}
    if isinstance(value, list):
        return [relative(item, made_in, project) for item in value]
    if isinstance(value, str) and value.startswith("/"):
        if value == made_in:
            return "."
        for root in (made_in, project):
            if root and value.startswith(root + "/"):
                return value[len(root) + 1:]
    return value


def wall_s(folder: Path) -> float:
    """The A/B's wall time: the sides' own walls (sequential: one after the other;
    interleaved: the rounds, each as long as its longest-lived side)."""
    manifest = load_manifest(folder)
    walls: dict[int, list[float]] = {}
    for run in manifest.runs:
        status = read_json(folder / run.name / "status.json")
        walls.setdefault(run.round, []).append(float(status.get("wall_s") or 0.0))
    if manifest.schedule == "interleaved":
        return sum(max(w) for w in walls.values())
    return sum(sum(w) for w in walls.values())


def row(cell: AbCell) -> str:
    low, high = cell.ci_pct
    floor = "-" if cell.aa_floor_pct is None else f"{cell.aa_floor_pct:.2f}"
    return f"{cell.verdict} {cell.delta_pct:+.2f} [{low:+.2f}, {high:+.2f}] {floor}"


def table(reference: Path, folders: dict[str, Path], min_us: float) -> str:
    truth = {c["id"]: c for c in json.loads(reference.read_text())["cells"]}
    reports = {name: AB_FORMAT.read(folder / "ab.json") for name, folder in folders.items()}
    by_id = {name: {c.id: c for c in r.cells} for name, r in reports.items()}
    ids = [i for i in truth if all(i in cells for cells in by_id.values())
           and truth[i]["a_median_s"] * 1e6 >= min_us]
    lines = [
        "| cell | A time | true effect [95%] | " + " | ".join(
            f"{n}: verdict, delta [interval], A/A floor" for n in folders) + " |",
        "| --- | ---: | ---: |" + " --- |" * len(folders),
    ]
    for cell_id in ids:
        ref = truth[cell_id]
        low, high = ref["ci95_pct"]
        lines.append(
            f"| {cell_id} | {ref['a_median_s'] * 1e6:.0f} us | {ref['delta_pct']:+.2f}"
            f" [{low:+.2f}, {high:+.2f}] % | "
            + " | ".join(row(by_id[n][cell_id]) for n in folders) + " |"
        )
    lines += ["", "| A/B | rounds | no-effect interval width (median) | A/A floor (median) "
              "| effects >= 1% called | false calls | true effect inside | overlaps the "
              "reference | sides' wall |", "| --- |" + " ---: |" * 8]
    for name, report in reports.items():
        cells = [by_id[name][i] for i in ids]
        quiet = [c for c in cells if abs(truth[c.id]["delta_pct"]) < NO_EFFECT_PCT]
        loud = [c for c in cells if abs(truth[c.id]["delta_pct"]) >= CALLED_PCT]
        widths = [c.ci_pct[1] - c.ci_pct[0] for c in quiet]
        floors = [c.aa_floor_pct for c in cells if c.aa_floor_pct is not None]
        called = sum(1 for c in loud
                     if c.verdict == ("slower" if truth[c.id]["delta_pct"] > 0 else "faster"))
        false = sum(1 for c in quiet if c.verdict in ("faster", "slower"))
        inside = sum(1 for c in cells if c.ci_pct[0] <= truth[c.id]["delta_pct"] <= c.ci_pct[1])
        overlaps = sum(1 for c in cells if c.ci_pct[0] <= truth[c.id]["ci95_pct"][1]
                       and truth[c.id]["ci95_pct"][0] <= c.ci_pct[1])
        lines.append(
            f"| {name} | {report.rounds} | {_median(widths)} | {_median(floors, '%')} | "
            f"{called} of {len(loud)} | {false} | {inside} of {len(cells)} | "
            f"{overlaps} of {len(cells)} | {wall_s(folders[name]):.0f} s |"
        )
    return "\n".join(lines)


def _median(values: list[float], unit: str = " points") -> str:
    return f"{statistics.median(values):.2f}{unit}" if values else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack")
    packing.add_argument("source", type=Path)
    packing.add_argument("dest", type=Path)
    tabling = commands.add_parser("table")
    tabling.add_argument("--reference", type=Path, required=True)
    tabling.add_argument("--min-us", type=float, default=0.0)
    tabling.add_argument("folders", nargs="+", help="NAME=FOLDER")
    args = parser.parse_args(argv)
    if args.command == "pack":
        pack(args.source, args.dest)
        return 0
    folders = dict(item.split("=", 1) for item in args.folders)
    print(table(args.reference, {k: Path(v) for k, v in folders.items()}, args.min_us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
