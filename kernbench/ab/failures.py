"""What each side run measured of each cell, which cell runs failed, and so the rounds
each cell of an A/B is judged on (docs/adr/0020-ab-method.md, its failures addendum)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from kernbench.ab.interleave import cell_pairs
from kernbench.ab.schedule import AbManifest, SideRun
from kernbench.results.ab import FailedRun, RoundTurns
from kernbench.results.model import CellResult, Results

RunStatus = Literal["ok", "failed", "crashed"]


@dataclass(frozen=True)
class RunOutcome:
    """What one side run left: its results, or why it left none."""

    results: Results | None
    problem: str = ""


@dataclass(frozen=True)
class Measured:
    """A cell's round median and samples in one side run."""

    median_s: float
    samples_s: list[float]
    timer: str = ""


def measured(cell: CellResult | None) -> Measured | str:
    """The cell's round median and samples in one run, or why there are none."""
    if cell is None:
        return "cell missing from the run's results"
    if cell.status != "ok":
        return f"{cell.status}: {cell.reason or 'no reason given'}"
    for round_result in cell.rounds:
        if round_result.status == "ok" and round_result.samples_s:
            median = round_result.median_s
            if median is None:
                median = float(np.median(round_result.samples_s))
            if not 0 < median < math.inf:  # a timer's overhead subtracted past the call
                return f"a round median of {median:.3g} s, not a time a ratio can be taken of"
            return Measured(median, list(round_result.samples_s), round_result.timer or "")
    return "no ok round with samples"


@dataclass(frozen=True)
class Failures:
    """Every failed cell run (a run that left nothing fails each variant once), each run's
    status, and per cell the rounds in which one of its runs failed."""

    runs: list[FailedRun]
    statuses: dict[str, RunStatus]
    cell_rounds: dict[str, set[int]]

    def variants(self) -> dict[str, list[int]]:
        """Per variant with a failure, the rounds it failed in."""
        rounds: dict[str, set[int]] = {}
        for failure in self.runs:
            rounds.setdefault(failure.variant, set()).add(failure.round)
        return {variant: sorted(found) for variant, found in rounds.items()}

    def judged_rounds(self, manifest: AbManifest, cell_id: str) -> list[int]:
        """The rounds in which every side measured the cell."""
        failed = self.cell_rounds.get(cell_id, set())
        return [k for k in range(1, manifest.rounds + 1) if k not in failed]


def find_failures(
    manifest: AbManifest,
    outcomes: Mapping[str, RunOutcome],
    tables: Mapping[str, Mapping[str, CellResult]],
    cells: Mapping[str, CellResult],
    variants: Sequence[str],
    turns: Mapping[int, RoundTurns],
) -> Failures:
    """`tables`: each run's cells by id; `cells`: every cell of the A/B, by id."""
    failed: list[FailedRun] = []
    statuses: dict[str, RunStatus] = {}
    cell_rounds: dict[str, set[int]] = {}
    for run in manifest.runs:
        outcome = outcomes.get(run.name)
        if outcome is None or outcome.results is None:
            statuses[run.name] = "crashed"
            reason = outcome.problem if outcome else "the run left nothing"
            failed += [_failure(variant, run, reason) for variant in variants]
            for cell_id in cells:
                cell_rounds.setdefault(cell_id, set()).add(run.round)
            continue
        statuses[run.name] = "ok"
        for cell_id, cell in cells.items():
            why = _why_unmeasured(manifest, tables[run.name].get(cell_id), cell_id, turns, run)
            if why is not None:
                statuses[run.name] = "failed"
                failed.append(_failure(cell.variant, run, f"{cell_id}: {why}"))
                cell_rounds.setdefault(cell_id, set()).add(run.round)
    return Failures(failed, statuses, cell_rounds)


def _why_unmeasured(
    manifest: AbManifest,
    cell: CellResult | None,
    cell_id: str,
    turns: Mapping[int, RoundTurns],
    run: SideRun,
) -> str | None:
    found = measured(cell)
    if isinstance(found, str):
        return found
    if manifest.schedule == "interleaved":
        return _unpaired(turns.get(run.round), cell_id, run.side)
    return None


def _unpaired(record: RoundTurns | None, cell_id: str, side: str) -> str | None:
    """Why an interleaved side has no paired turns for the cell, or None when it has."""
    if record is None:
        return "the round left no turns file"
    turns = record.cells.get(cell_id)
    if turns is None:
        return "no turns recorded"
    if side == "A" or cell_pairs(turns, side):
        return None
    return f"no paired turns ({turns.reason or 'none taken'})"


def _failure(variant: str, run: SideRun, reason: str) -> FailedRun:
    return FailedRun(
        variant=variant, round=run.round, run=run.name, log=f"{run.name}/log.txt", reason=reason
    )
