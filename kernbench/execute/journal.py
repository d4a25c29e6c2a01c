"""The files between the parent and its workers, typed and versioned, and their reading.

The parent writes a `Task` (`tasks/r<k>.json`) and starts a worker on it; the worker
writes `journal/r<k>/current.json` before each cell and the cell's `JournalEntry`
(`journal/r<k>/<index>.json`) after it, atomically. The journal, not results.json, is
the record while a run is in flight: `read_journal` turns it into round results per
cell, and `--resume` measures only the cells without an entry.

Entries are written atomically, so a damaged one (truncated, not JSON, not an entry: a
disk or a hand that broke it) is never a worker's doing: reading it gives a failed round
with the reason, and `quarantine_damaged` (at the start of every run and `--resume`)
moves it aside as `<index>.json.damaged`, so the cell is measured again.

Format history (each file: bump its version and add a step to its `update_to`):
  journal entry 0: written before versions; the same keys, without `schema_version`.
  journal entry 1, task 1, current cell 1: `schema_version`; later the task's `slot`
  and the current cell's `log_from` (with defaults: no bump).

Workers that share a round (`--gpus`, one per GPU) each have a slot: their own
`current.<slot>.json`, task and log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernbench.errors import EXIT_FAILED, UserError
from kernbench.execute.pins import PinMode
from kernbench.plan import Cell
from kernbench.results.jsonio import FileFormat
from kernbench.results.model import RoundResult
from kernbench.spec.fields import Strict

# The line a worker writes to its round's log for each cell it finished; the runner leaves
# these out of a dead worker's last words.
FINISHED_LINE = re.compile(r"r\d+ \S+: (ok|failed)\b")


def finished_line(round_: int, cell_id: str, status: str, reason: str | None) -> str:
    return f"r{round_} {cell_id}: {status}" + (f" ({reason})" if reason else "")

JOURNAL_VERSION = 1
TASK_VERSION = 1
CURRENT_VERSION = 1
CURRENT_NAME = "current.json"
DAMAGED_SUFFIX = ".damaged"


class Task(Strict):
    """What one worker process runs: some cells of one round."""

    schema_version: int = TASK_VERSION
    bench_path: str
    round: int
    device: str
    cells: list[int]
    journal_dir: str
    pins_read: list[str] = []
    pins_write: list[str] = []
    pins_mode: PinMode = "auto"
    device_model: str = ""
    slot: str = ""  # names this worker's current file among a round's parallel workers
    # The timer (a spec.timer_model.TIMERS name) each of these cells was timed with in the
    # run's earliest round that timed it, by cell index: this round times it the same way.
    timers: dict[int, str] = {}


class JournalEntry(Strict):
    """One cell measured in one round, as the worker (or the parent, for a death) saw it."""

    schema_version: int = JOURNAL_VERSION
    index: int
    id: str
    result: RoundResult
    pin: dict[str, Any] | None = None  # the pin the round used, as the pins file holds it


class CurrentCell(Strict):
    """The cell in flight: what the parent blames, and times out, if the worker dies."""

    schema_version: int = CURRENT_VERSION
    index: int
    id: str
    started: float  # time.time() when the cell started
    # How far the round's log reached as the cell started: its own last words come after
    # (what the worker's earlier cells printed comes before). 0: unknown, the whole log.
    log_from: int = 0


def _same_keys(data: dict[str, Any]) -> dict[str, Any]:
    return data


TASK: FileFormat[Task] = FileFormat("worker task", TASK_VERSION, Task)
JOURNAL: FileFormat[JournalEntry] = FileFormat(
    "journal entry", JOURNAL_VERSION, JournalEntry, update_to={1: _same_keys}
)
CURRENT: FileFormat[CurrentCell] = FileFormat("current cell", CURRENT_VERSION, CurrentCell)


def journal_path(journal_dir: Path, round_: int, index: int) -> Path:
    return Path(journal_dir) / f"r{round_}" / f"{index:05d}.json"


def current_path(journal_dir: Path, round_: int, slot: str = "") -> Path:
    name = f"current.{slot}.json" if slot else CURRENT_NAME
    return Path(journal_dir) / f"r{round_}" / name


def is_journaled(journal_dir: Path, round_: int, index: int) -> bool:
    """Whether the cell has an entry (after `quarantine_damaged`, a readable one)."""
    return journal_path(journal_dir, round_, index).is_file()


def is_all_journaled(
    journal_dir: Path, rounds: Iterable[int], indices: Sequence[int], *, readable: bool = False
) -> bool:
    """Whether every cell of `indices` has an entry in every round of `rounds`; with
    `readable`, one that reads (a damaged entry counts as none: it is measured again)."""
    def has_entry(round_: int, index: int) -> bool:
        if readable:
            return read_entry(journal_dir, round_, index) is not None
        return is_journaled(journal_dir, round_, index)
    return all(has_entry(r, index) for r in rounds for index in indices)


def write_entry(journal_dir: Path, round_: int, entry: JournalEntry) -> None:
    JOURNAL.write(journal_path(journal_dir, round_, entry.index), entry)


@dataclass(frozen=True)
class Damaged:
    """A journal entry that cannot be read, and why."""

    path: Path
    why: str

    def warning(self) -> str:
        return f"warning: {self.path}: damaged journal entry ({self.why}); measuring it again"

    def as_result(self, round_: int) -> RoundResult:
        return RoundResult(
            round=round_, status="failed",
            reason=f"damaged journal entry ({self.why}); `kernbench run --resume` measures "
                   "it again",
        )


def load_entry(journal_dir: Path, round_: int, index: int) -> JournalEntry | Damaged | None:
    """The cell's entry; None when it has none; `Damaged` when the file is not an entry of
    this cell. An entry of a newer kernbench is refused (one line), never overwritten."""
    path = journal_path(journal_dir, round_, index)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Damaged(path, exc.strerror or type(exc).__name__)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, an integer too long
        return Damaged(path, "not valid JSON")
    if _newer(data):
        return JOURNAL.parse(data, path)  # raises the one-line refusal
    try:
        entry = JOURNAL.parse(data, path)
    except UserError as exc:
        return Damaged(path, exc.message.removeprefix(f"{path}: "))
    if entry.index != index:
        return Damaged(path, f"it holds cell {entry.index}")
    return entry


def _newer(data: Any) -> bool:
    version = data.get("schema_version") if isinstance(data, dict) else None
    return isinstance(version, int) and not isinstance(version, bool) and (
        version > JOURNAL_VERSION
    )


def read_entry(journal_dir: Path, round_: int, index: int) -> JournalEntry | None:
    """The cell's entry, or None while it has none (entries are written atomically) or
    when it is damaged."""
    entry = load_entry(journal_dir, round_, index)
    return entry if isinstance(entry, JournalEntry) else None


def quarantine_damaged(
    journal_dir: Path, cells: Sequence[Cell], rounds: Sequence[int]
) -> list[Damaged]:
    """Move every damaged entry of `cells` aside (`<index>.json.damaged`), so that the cell
    counts as not measured and is measured again; the entries moved."""
    moved = []
    for round_ in rounds:
        for cell in cells:
            entry = load_entry(journal_dir, round_, cell.index)
            if isinstance(entry, Damaged):
                aside = entry.path.with_name(entry.path.name + DAMAGED_SUFFIX)
                try:
                    entry.path.replace(aside)
                except OSError as exc:
                    raise UserError(f"{entry.path}: damaged, and cannot be moved aside: "
                                    f"{exc.strerror}", EXIT_FAILED) from None
                moved.append(entry)
    return moved


def write_current(journal_dir: Path, round_: int, current: CurrentCell, slot: str = "") -> None:
    CURRENT.write(current_path(journal_dir, round_, slot), current)


def read_current(journal_dir: Path, round_: int, slot: str = "") -> CurrentCell | None:
    """The cell in flight, or None between cells (the worker removes the file). Written
    atomically: a file that does not read (damaged from outside) names no cell."""
    path = current_path(journal_dir, round_, slot)
    try:
        return CURRENT.parse(json.loads(path.read_bytes()), path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError, UserError):
        return None


@dataclass
class JournalReading:
    """What the journal holds for some cells over some rounds."""

    rounds: dict[int, list[RoundResult]] = field(default_factory=dict)  # by cell index
    pins: dict[str, Any] = field(default_factory=dict)  # the pins used, by key
    stale_pins: list[str] = field(default_factory=list)  # one message per stale pin


def read_journal(
    journal_dir: Path, cells: Sequence[Cell], rounds: Sequence[int]
) -> JournalReading:
    """Each cell's round results (the rounds it has an entry for), its pins, stale pins."""
    reading = JournalReading()
    for cell in cells:
        found = reading.rounds.setdefault(cell.index, [])
        for round_ in rounds:
            entry = load_entry(journal_dir, round_, cell.index)
            if entry is None:
                continue
            if isinstance(entry, Damaged):
                found.append(entry.as_result(round_))
                continue
            result = entry.result
            found.append(result)
            if entry.pin and result.pin:
                reading.pins[result.pin] = entry.pin
            if "stale_pin" in result.extra:
                reading.stale_pins.append(
                    f"{cell.id} (round {round_}): {result.extra['stale_pin']}"
                )
    return reading
