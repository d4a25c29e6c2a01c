"""`kernbench merge`: join the results of a sharded sweep into one results file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernbench.errors import UserError
from kernbench.results import model as results_io
from kernbench.results.kinds import RESULTS_NAME, RUN_JSON_NAME
from kernbench.results.provenance import recorded_git
from kernbench.units import labelled

# Fields every shard must share: the same bench, measured the same way.
SHARED = ("bench", "spec_hash", "device", "rounds", "first_round")


def check_merge_out(out: Path, parts: Sequence[Path]) -> None:
    """Refuse, before reading any shard, an --out that cannot be the merged file: a
    folder, or a file in a run's folder (a shard's own results, its figures beside them)."""
    out = Path(out)
    if out.is_dir():
        raise UserError(f"--out: {out} is a folder; give the merged file's path")
    if (out.parent / RUN_JSON_NAME).is_file():
        raise UserError(f"--out: {out.parent} holds a run, whose {RESULTS_NAME} and figures "
                        "are its own; give a path outside it")
    for part in parts:
        if Path(part).resolve() == out.resolve():
            raise UserError(f"--out: {out} is one of the files merged; give another path")


def merge_results(paths: Sequence[Path]) -> results_io.Results:
    if len(paths) < 2:
        raise UserError("merge: give at least two results files")
    loaded = [results_io.load(Path(path)) for path in paths]
    first = loaded[0]
    for path, other in zip(paths[1:], loaded[1:], strict=True):
        _refuse_differing(path, other, paths[0], first, SHARED)
    check_shards(paths, loaded)
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
            "commit": _commit(part),
            "cells": len(part.cells),
        }
        for path, part in zip(paths, loaded, strict=True)
    ]
    merged_cells = [cell for _, (_, cell) in sorted(cells.items())]
    return first.model_copy(update={
        "cells": merged_cells,
        "fits": results_io.collective_fits(merged_cells),  # one shard's fits saw only its own cells
        "provenance": {**first.provenance, "merged_from": shards},
        "pins": {key: pin for part in loaded for key, pin in part.pins.items()},
        "stale_pins": [stale for part in loaded for stale in part.stale_pins],
        "complete": all(part.complete for part in loaded),
        "created_utc": min(part.created_utc for part in loaded),
        "finished_utc": max((p.finished_utc for p in loaded if p.finished_utc), default=None),
        "selection": first.selection and first.selection.model_copy(update={"shard": None}),
    })


def check_shards(paths: Sequence[Path], loaded: Sequence[results_io.Results]) -> None:
    """Refuse shards that do not make one whole sweep: of other selections (--only,
    --cells: their plans differ), of other counts, one given twice, one missing. Files
    from before results recorded their selection are taken as they come."""
    known = [(Path(path), part.selection) for path, part in zip(paths, loaded, strict=True)
             if part.selection is not None]
    if not known:
        return
    first_path, first = known[0]
    for path, selection in known[1:]:
        _refuse_differing(path, selection, first_path, first, ("only", "cells"), "selection.")
    shards: dict[str, Path] = {}
    for path, selection in known:
        if selection.shard is None:
            continue
        if selection.shard in shards:
            raise UserError(f"{path}: shard {selection.shard} given twice (also "
                            f"{shards[selection.shard]})")
        shards[selection.shard] = path
    counts = {shard.partition("/")[2] for shard in shards}
    if len(counts) > 1:
        raise UserError(f"merge: shards of different counts ({', '.join(sorted(shards))}); "
                        "these are not shards of one sweep")
    if counts and len(known) == len(loaded):
        count = int(counts.pop())
        missing = [f"{i}/{count}" for i in range(1, count + 1) if f"{i}/{count}" not in shards]
        if missing:
            raise UserError(f"merge: {labelled('shard', missing)} missing; give every shard of "
                            "the sweep")


def _refuse_differing(
    path: Path, part: object, first_path: Path, first: object, names: Sequence[str],
    prefix: str = "",
) -> None:
    """Shards share these fields with the first file, or they are not of one sweep."""
    for name in names:
        if getattr(part, name) != getattr(first, name):
            raise UserError(
                f"{path}: {prefix}{name}: {getattr(part, name)!r} differs from "
                f"{first_path}'s {getattr(first, name)!r}; these are not shards of one sweep"
            )


def _commit(results: results_io.Results) -> str | None:
    return recorded_git(results.provenance).get("commit")


def mixed_provenance(merged: results_io.Results) -> str | None:
    """A note when the shards were measured at different commits or on different device
    models: allowed (a cluster's nodes differ), but the merged figures mix them."""
    shards = merged.provenance.get("merged_from", [])
    differ = []
    for key, what in (("commit", "commits"), ("device_name", "device models")):
        seen = sorted({str(shard.get(key)) for shard in shards})
        if len(seen) > 1:
            differ.append(f"{what} ({', '.join(seen)})")
    return f"note: the shards were measured at different {' and '.join(differ)}" if differ else None
