"""Read what the side runs left in an A/B folder: one `RunOutcome` per scheduled run."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kernbench.ab.failures import RunOutcome
from kernbench.ab.schedule import AbManifest
from kernbench.errors import UserError
from kernbench.execute.last_words import exit_text  # `run`'s words for an exit
from kernbench.results import model as results
from kernbench.results.ab import TURNS_FORMAT, RoundTurns
from kernbench.results.jsonio import FileFormat, plain_or_packed, unchanged
from kernbench.results.kinds import RESULTS_NAME
from kernbench.spec.fields import Strict

LOG_NAME = "log.txt"
STATUS_NAME = "status.json"  # the runner's note: exit code, wall time, or why skipped


class SideStatus(Strict):
    schema_version: int = 1
    returncode: int | None = None
    wall_s: float | None = None
    skipped: str | None = None  # why the side never ran


# Version 0 (before versions) had the same keys.
STATUS_FORMAT = FileFormat("status of an A/B side", 1, SideStatus, {1: unchanged})


def load_outcomes(folder: Path, manifest: AbManifest) -> dict[str, RunOutcome]:
    return {run.name: load_outcome(Path(folder) / run.name) for run in manifest.runs}


def load_outcome(run_dir: Path) -> RunOutcome:
    path = plain_or_packed(run_dir / RESULTS_NAME)  # committed A/B folders keep them packed
    if path is not None:
        try:
            return RunOutcome(results.load(path))
        except UserError as exc:
            return RunOutcome(None, f"unreadable results: {exc}")
    return RunOutcome(None, _why_no_results(run_dir))


def finished_rounds(folder: Path, manifest: AbManifest) -> int:
    """How many leading rounds have every side ended (with results or an exit status; an
    interleaved round also with its turns file): an A/B killed mid-round leaves sides that
    never ended, and its later rounds never ran."""
    for round_ in range(1, manifest.rounds + 1):
        if manifest.schedule == "interleaved":  # the turns file is the round's last word
            ended = found_turns(folder, round_) is not None
        else:
            ended = all(_ended(Path(folder) / run.name)
                        for run in manifest.runs if run.round == round_)
        if not ended:
            return round_ - 1
    return manifest.rounds


def _ended(run_dir: Path) -> bool:
    """A side the runner saw exit (its status), or one that left whole results; a side
    stopped with the A/B leaves partial results (its cells pending) and no status."""
    return (run_dir / STATUS_NAME).is_file() or side_finished(run_dir)


def _why_no_results(run_dir: Path) -> str:
    status_path = run_dir / STATUS_NAME
    if not status_path.is_file():
        return "no results.json (the run never finished)"
    try:
        status = STATUS_FORMAT.read(status_path)
    except UserError:
        return "no results.json"
    if status.skipped:
        return f"not run: {status.skipped}"
    if status.returncode is None:
        return "ended and wrote no results.json"
    return f"exited with {exit_text(status.returncode)} and wrote no results.json"


def side_finished(run_dir: Path) -> bool:
    """Whether a side left its whole results (`is_whole`)."""
    return is_whole(load_outcome(Path(run_dir)))


def is_whole(outcome: RunOutcome) -> bool:
    """A side's whole results (failed cells included; plain or packed, as a committed
    folder keeps them): an interrupted A/B keeps it; a side without them is run again
    from scratch."""
    return outcome.results is not None and outcome.results.complete


def round_finished(
    folder: Path, manifest: AbManifest, round_: int, outcomes: Mapping[str, RunOutcome]
) -> bool:
    """An interleaved round is kept whole or not at all: its turns file and every side's
    results (`outcomes`, by run name), or it is run again from scratch."""
    sides = [run for run in manifest.runs if run.round == round_]
    path = found_turns(folder, round_)
    if path is None:
        return False
    try:
        TURNS_FORMAT.read(path)
    except UserError:
        return False
    return all(is_whole(outcomes[run.name]) for run in sides)


def turns_path(folder: Path, round_: int) -> Path:
    return Path(folder) / f"r{round_}_turns.json"


def found_turns(folder: Path, round_: int) -> Path | None:
    """A round's turns file, plain or packed (as committed A/B folders keep it, and the
    sides' results); None when the round left none."""
    return plain_or_packed(turns_path(folder, round_))


def load_turns(folder: Path, manifest: AbManifest) -> dict[int, RoundTurns]:
    """An interleaved A/B's turns by round (rounds that left no turns file are absent)."""
    if manifest.schedule != "interleaved":
        return {}
    found = {}
    for round_ in range(1, manifest.rounds + 1):
        path = found_turns(folder, round_)
        if path is not None:
            found[round_] = TURNS_FORMAT.read(path)
    return found
