"""`kernbench merge`: join the results of a sharded sweep into one results file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernbench.errors import UserError
from kernbench.results import model as results_io
from kernbench.results.build import collective_fits

# Fields every shard must share: the same bench, measured the same way.
SHARED = ("bench", "spec_hash", "device", "rounds", "first_round")


def check_merge_out(out: Path) -> None:
    """Refuse, before reading any shard, an --out that cannot be the merged file."""
    if Path(out).is_dir():
        raise UserError(f"--out: {out} is a folder; give the merged file's path")


def merge_results(paths: Sequence[Path]) -> results_io.Results:
    if len(paths) < 2:
        raise UserError("merge: give at least two results files")
    loaded = [results_io.load(Path(path)) for path in paths]
    first = loaded[0]
    for path, other in zip(paths[1:], loaded[1:], strict=True):
        for name in SHARED:
            if getattr(other, name) != getattr(first, name):
                raise UserError(
                    f"{path}: {name}: {getattr(other, name)!r} differs from "
                    f"{paths[0]}'s {getattr(first, name)!r}; these are not shards of one sweep"
                )
    cells: dict[int, tuple[Path, results_io.CellResult]] = {}
    for path, part in zip(paths, loaded, strict=True):
        for cell in part.cells:
            if cell.index in cells:
                raise UserError(f"{path}: cell {cell.id} is also in {cells[cell.index][0]}")
            cells[cell.index] = (Path(path), cell)
    shards: list[dict[str, Any]] = [
        {
            "path": str(path),
            "host": part.provenance.get("host"),
            "device_name": part.provenance.get("device_name"),
            "command": part.provenance.get("command"),
            "cells": len(part.cells),
        }
        for path, part in zip(paths, loaded, strict=True)
    ]
    merged_cells = [cell for _, (_, cell) in sorted(cells.items())]
    return first.model_copy(update={
        "cells": merged_cells,
        "fits": collective_fits(merged_cells),  # one shard's fits saw only its own cells
        "provenance": {**first.provenance, "merged_from": shards},
        "pins": {key: pin for part in loaded for key, pin in part.pins.items()},
        "stale_pins": [stale for part in loaded for stale in part.stale_pins],
        "complete": all(part.complete for part in loaded),
        "created_utc": min(part.created_utc for part in loaded),
        "finished_utc": max((p.finished_utc for p in loaded if p.finished_utc), default=None),
    })
