"""Which timer each cell of a round is given: the one the cell was first timed with.

`auto` chooses a cell's timer in every fresh process from a short estimate, and two
processes can choose differently (the committed H200 sweep timed Triton bf16 1024^3 with
graphs in round 1 and events in rounds 2 and 3); samples of two timers do not compare.
So a cell keeps its first choice: within a run, from its earliest round in the journal;
across runs (an A/B's sequential sides), from a timers file, `{cell id: timer}`, that the
first run to time a cell writes and every later run is given (`kernbench run --timers`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from kernbench.errors import UserError
from kernbench.execute.journal import read_entry
from kernbench.plan import Cell
from kernbench.results.jsonio import read_json, write_json
from kernbench.results.model import Results
from kernbench.spec.timer_model import TIMERS

TIMERS_NAME = "timers.json"  # an A/B folder's: the timer each cell was first timed with
KNOWN_SHOWN = 5  # cell ids an unknown one's error lists


def read_timers(path: Path) -> dict[str, str]:
    """The timers file's `{cell id: timer}`; a malformed file is a one-line error."""
    try:
        data = read_json(Path(path), "timers file")
    except UserError as exc:
        raise UserError(f"--timers: {exc.message}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v in TIMERS for k, v in data.items()
    ):
        known = ", ".join(sorted(TIMERS))
        raise UserError(f"--timers: {path}: not a map of cell id to a timer ({known})")
    return data


def check_timer_ids(path: Path, timers: Mapping[str, str], cells: Sequence[Cell]) -> None:
    """Every id the timers file names is a cell of `cells`: the bench's whole plan on the
    device, not the run's selection (an A/B side's file names its twins, the other side's
    cells, too). A typo would otherwise time its cell with a timer no one chose."""
    known = [cell.id for cell in cells]
    unknown = sorted(set(timers) - set(known))
    if unknown:
        shown = ", ".join(known[:KNOWN_SHOWN]) or "none"
        more = f" ({len(known)} in all)" if len(known) > KNOWN_SHOWN else ""
        raise UserError(f"--timers: {path}: the plan has no cell {unknown[0]!r}; "
                        f"known: {shown}{more}")


def record_timers(path: Path, results: Results, twins: Mapping[str, str] | None = None) -> None:
    """Add to the timers file each cell of `results` it does not name yet: its timer; and
    the same timer for the cell's twin (`twins`, by id: an A/B of two variants times a
    pair's two cells one way)."""
    timers = read_timers(path) if Path(path).exists() else {}
    for cell in results.cells:
        timed = [r.timer for r in cell.rounds if r.status == "ok" and r.timer in TIMERS]
        if not timed:
            continue
        for cell_id in (cell.id, (twins or {}).get(cell.id)):
            if cell_id is not None and cell_id not in timers:
                timers[cell_id] = timed[0]
    write_json(path, dict(sorted(timers.items())))


def round_timers(
    journal: Path, round_: int, cells: Sequence[Cell], given: Mapping[str, str] | None = None
) -> dict[int, str]:
    """Each cell's timer by its index: the one `given` names for it, else the one its
    earliest earlier round was timed with; cells with neither choose their own."""
    timers = {cell.index: given[cell.id] for cell in cells if given and cell.id in given}
    for cell in cells:
        for earlier in range(1, round_):
            if cell.index in timers:
                break
            entry = read_entry(journal, earlier, cell.index)
            if entry is not None and entry.result.timer in TIMERS:
                timers[cell.index] = entry.result.timer
    return timers
