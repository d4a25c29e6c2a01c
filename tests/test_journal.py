"""The parent/worker files: tasks, journal entries, the cell in flight, and their reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernbench.errors import UserError
from kernbench.execute.journal import (
    JOURNAL_VERSION,
    TASK,
    CurrentCell,
    JournalEntry,
    Task,
    current_path,
    is_all_journaled,
    journal_path,
    read_current,
    read_entry,
    read_journal,
    write_current,
    write_entry,
)
from kernbench.plan import Cell
from kernbench.results.model import Check, RoundResult


def cell(index: int) -> Cell:
    return Cell(variant="v", axes={"n": index}, params={"n": index}, index=index)


def measured(round_: int, **extra: object) -> RoundResult:
    return RoundResult(
        round=round_, status="ok", samples_s=[1e-3, 2e-3, 3e-3], median_s=2e-3,
        check=Check(rel_err=0.0, tolerance=1e-6, ok=True), side="A", extra=dict(extra),
    )  # fmt: skip


def test_an_entry_round_trips_with_its_version(tmp_path: Path) -> None:
    result = measured(2, tile=[64, 64]).model_copy(update={"pin": "k|cpu|n=3"})
    entry = JournalEntry(index=3, id="v/n=3", result=result, pin={"winner": {"k": 1}})
    write_entry(tmp_path, 2, entry)
    path = journal_path(tmp_path, 2, 3)
    assert path == tmp_path / "r2" / "00003.json"
    assert json.loads(path.read_text())["schema_version"] == JOURNAL_VERSION == 1
    assert read_entry(tmp_path, 2, 3) == entry
    assert read_entry(tmp_path, 2, 4) is None


def test_an_entry_from_before_versions_reads_as_version_1(tmp_path: Path) -> None:
    # As a worker wrote it before versions: an interrupted run still resumes.
    old = {"index": 0, "id": "v/n=0", "result": measured(1).model_dump(mode="json"),
           "pin": None}
    path = journal_path(tmp_path, 1, 0)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    entry = read_entry(tmp_path, 1, 0)
    assert entry is not None and entry.schema_version == 1 and entry.result == measured(1)


def test_a_newer_entry_is_refused(tmp_path: Path) -> None:
    entry = JournalEntry(index=0, id="v/n=0", result=measured(1))
    write_entry(tmp_path, 1, entry)
    path = journal_path(tmp_path, 1, 0)
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 9}))
    with pytest.raises(UserError, match="schema_version: 9 is newer"):
        read_entry(tmp_path, 1, 0)


def test_a_task_round_trips_and_an_unversioned_one_is_refused(tmp_path: Path) -> None:
    task = Task(bench_path="/b/x.yaml", round=2, device="cpu", cells=[0, 3],
                journal_dir="/r/journal", pins_read=["/p.json"], pins_mode="replay")
    TASK.write(tmp_path / "t.json", task)
    assert TASK.read(tmp_path / "t.json") == task
    # A task is written just before its worker starts: never one from an older kernbench.
    data = json.loads((tmp_path / "t.json").read_text())
    del data["schema_version"]
    (tmp_path / "t.json").write_text(json.dumps(data))
    with pytest.raises(UserError, match="schema_version: 0 cannot be migrated"):
        TASK.read(tmp_path / "t.json")


def test_all_journaled_counts_a_damaged_entry_only_when_not_asked_readable(
    tmp_path: Path
) -> None:
    write_entry(tmp_path, 1, JournalEntry(index=0, id="v/n=0", result=measured(1)))
    journal_path(tmp_path, 1, 1).write_text("{not json")
    assert is_all_journaled(tmp_path, [1], [0, 1])
    assert is_all_journaled(tmp_path, [1], [0], readable=True)
    assert not is_all_journaled(tmp_path, [1], [0, 1], readable=True)
    assert not is_all_journaled(tmp_path, [1, 2], [0])


def test_the_cell_in_flight(tmp_path: Path) -> None:
    assert read_current(tmp_path, 1) is None
    write_current(tmp_path, 1, CurrentCell(index=4, id="v/n=4", started=12.5))
    assert current_path(tmp_path, 1) == tmp_path / "r1" / "current.json"
    assert read_current(tmp_path, 1) == CurrentCell(index=4, id="v/n=4", started=12.5)


def test_reading_the_journal_per_cell_over_the_rounds(tmp_path: Path) -> None:
    stale = measured(2, stale_pin="fingerprint changed: source_hash")
    pinned = measured(1).model_copy(update={"pin": "key"})
    write_entry(tmp_path, 1, JournalEntry(index=0, id="v/n=0", result=pinned,
                                          pin={"winner": {"k": 2}}))
    write_entry(tmp_path, 2, JournalEntry(index=0, id="v/n=0", result=stale))
    write_entry(tmp_path, 2, JournalEntry(index=1, id="v/n=1", result=measured(2)))
    write_entry(tmp_path, 9, JournalEntry(index=1, id="v/n=1", result=measured(9)))
    reading = read_journal(tmp_path, [cell(0), cell(1), cell(2)], range(1, 3))
    assert reading.rounds == {0: [pinned, stale], 1: [measured(2)], 2: []}
    assert reading.pins == {"key": {"winner": {"k": 2}}}
    assert reading.stale_pins == ["v/n=0 (round 2): fingerprint changed: source_hash"]
