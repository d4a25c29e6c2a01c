"""A cell keeps one timer: through a round's turns, and from its first round to the rest.

`auto` decides by one eager estimate in each fresh process, which can fall either side
of its threshold; on the H200 a cell timed with graphs in round 1 and with events in
rounds 2 and 3 pooled both timers' samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.execute import pins as pinning
from kernbench.execute import worker
from kernbench.execute.cell_timers import read_timers, record_timers, round_timers
from kernbench.execute.journal import JournalEntry, write_entry
from kernbench.execute.turns import run_in_turns
from kernbench.execute.worker import CellRunner
from kernbench.plan import Cell
from kernbench.results.model import RoundResult
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.base import Measurement

CELL = Cell(variant="v", axes={"n": 1}, params={"n": 1}, index=0)


@pytest.fixture
def kinds(monkeypatch) -> list[str]:
    """The kind each measurement asked for; an `auto` choice reads graph the first time
    and event after (as a busy host can make it)."""
    asked: list[str] = []

    class Chosen:
        def __init__(self, name: str) -> None:
            self.name = name

        def measure(self, kernel, spec):
            return Measurement(timer=self.name, samples_s=[1e-5] * 3, warmup_calls=1,
                               stop_reason="converged")

    def choose(kernel, spec, device, chosen=None):
        kind = chosen or spec.kind
        asked.append(kind)
        if kind == "auto":
            return Chosen("graph" if asked.count("auto") == 1 else "event")
        return Chosen(kind)

    monkeypatch.setattr(worker, "choose_timer", choose)
    return asked


def runner(timers: dict[int, str] | None = None, turns: int = 1) -> CellRunner:
    store = pinning.PinStore(read=[], write=[])
    return CellRunner(lambda **params: (lambda: None), "k", "", TimerSpec(turns=turns), store,
                      "auto", "cuda", "H200", timers=timers)


def test_every_turn_of_a_round_uses_the_timer_its_first_turn_chose(kinds) -> None:
    cell_runner = runner(turns=3)
    journaled: list[RoundResult] = []
    hooks = cell_runner.turns_hooks(1, lambda cell, result: journaled.append(result),
                                    lambda cell: None)
    run_in_turns([CELL], cell_runner.timer_spec, hooks)
    assert kinds == ["auto", "graph", "graph"]
    assert journaled[0].timer == "graph"


def test_a_round_after_the_first_uses_the_first_rounds_timer(kinds) -> None:
    assert runner({0: "event"}).run(CELL, 2).timer == "event"
    assert runner().run(CELL, 1).timer == "graph"
    assert kinds == ["event", "auto"]


def test_the_earliest_round_that_timed_a_cell_decides(tmp_path: Path) -> None:
    cells = [Cell(variant="v", axes={"n": n}, params={"n": n}, index=n) for n in range(3)]

    def journal(round_: int, index: int, timer: str, status: str = "ok") -> None:
        result = RoundResult(round=round_, status=status, timer=timer)
        write_entry(tmp_path, round_, JournalEntry(index=index, id=f"c{index}", result=result))

    journal(1, 0, "graph")
    journal(2, 0, "event")
    journal(1, 1, "")  # failed before any timer: the next round decides
    journal(2, 1, "event")
    journal(1, 2, "collective")  # not a timer kind a spec can name
    assert round_timers(tmp_path, 3, cells) == {0: "graph", 1: "event"}
    assert round_timers(tmp_path, 2, cells) == {0: "graph"}
    assert round_timers(tmp_path, 1, cells) == {}
    # A timers file (an A/B's first choices) decides over the journal.
    assert round_timers(tmp_path, 3, cells, {"v/n=0": "event", "v/n=2": "graph"}) == {
        0: "event", 1: "event", 2: "graph"}


def test_the_first_run_to_time_a_cell_writes_its_timer_and_later_runs_keep_it(
    tmp_path: Path,
) -> None:
    from kernbench.results.model import CellResult, Results

    def results(timers: dict[str, str]) -> Results:
        cells = [CellResult(id=cell_id, index=i, variant="v", axes={}, params={}, status="ok",
                            rounds=[RoundResult(round=1, status="ok", timer=timer)])
                 for i, (cell_id, timer) in enumerate(timers.items())]
        return Results(bench="b", device="cuda", rounds=1, spec_hash="h", spec={}, cells=cells,
                       created_utc="2026-11-30T00:00:00Z", provenance={})

    path = tmp_path / "timers.json"
    record_timers(path, results({"a": "graph", "b": "collective"}))
    record_timers(path, results({"a": "event", "c": "event"}))
    assert read_timers(path) == {"a": "graph", "c": "event"}


def test_a_malformed_timers_file_is_one_line(tmp_path: Path) -> None:
    from kernbench.errors import UserError

    path = tmp_path / "timers.json"
    path.write_text('{"a": "stopwatch"}')
    with pytest.raises(UserError, match="not a map of cell id to a timer"):
        read_timers(path)


def test_run_refuses_a_missing_timers_file_before_measuring(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kernbench import cli
    from kernbench.errors import EXIT_USAGE

    result = CliRunner().invoke(cli.app, [
        "run", "--bench", "milestone-1h-gemm", "--device", "cpu", "--out",
        str(tmp_path / "run"), "--timers", str(tmp_path / "missing.json")])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == f"--timers: {tmp_path / 'missing.json'}: timers file not found\n"
    assert result.stderr.startswith("--timers: ") and result.stderr.count("\n") == 1
    assert not (tmp_path / "run" / "results.json").exists()


@pytest.mark.parametrize("command", [["run"], ["plan"], ["ab", "--switch", "KB_X"]])
@pytest.mark.parametrize(
    ("kind", "duty"), [("event", ""), ("graph", ""), ("cupti", ", duty: isolated")]
)
def test_a_cuda_timer_on_the_cpu_is_refused_before_anything_runs(tmp_path, command, kind, duty):
    from cli_helpers import nap_bench
    from typer.testing import CliRunner

    from kernbench import cli
    from kernbench.errors import EXIT_USAGE

    bench = nap_bench(tmp_path, "ab: {switch: KB_X}\n")
    bench.write_text(bench.read_text().replace("timer: {", f"timer: {{kind: {kind}{duty}, "))
    out = tmp_path / "out"
    argv = [*command, "--bench", str(bench), "--device", "cpu"]
    if command[0] != "plan":
        argv += ["--out", str(out)]
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stderr.strip() == (
        f"{bench}:5: timer.kind: {kind} times CUDA work; on cpu every cell gets the cpu "
        "timer: use auto or cpu, or --device cuda"
    )
    assert not out.exists()


def test_a_timers_file_naming_a_cell_the_plan_lacks_is_refused(tmp_path, monkeypatch):
    import json

    from cli_helpers import nap_bench
    from typer.testing import CliRunner

    from kernbench import cli
    from kernbench.commands import run as run_command
    from kernbench.errors import EXIT_OK, EXIT_USAGE

    bench = nap_bench(tmp_path, work_us=(1, 2, 3, 4, 5, 6))
    monkeypatch.setattr(run_command, "measure", lambda run: EXIT_OK)
    timers = tmp_path / "timers.json"
    argv = ["run", "--bench", str(bench), "--device", "cpu", "--cells", "0",
            "--timers", str(timers), "--out", str(tmp_path / "out")]
    # Cells outside the run's selection are known: an A/B side's file names its twins.
    timers.write_text(json.dumps({"default/work_us=6": "cpu"}))
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == EXIT_OK, result.output
    timers.write_text(json.dumps({"default/work_us=6": "cpu", "default/work_us=7": "cpu"}))
    result = CliRunner().invoke(cli.app, [*argv[:-1], str(tmp_path / "out2")])
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stderr.strip() == (
        f"--timers: {timers}: the plan has no cell 'default/work_us=7'; known: default/work_us=1, "
        "default/work_us=2, default/work_us=3, default/work_us=4, default/work_us=5 (6 in all)"
    )


def test_a_timers_file_adds_no_build_of_the_plan(tmp_path, monkeypatch):
    import json

    from cli_helpers import nap_bench
    from typer.testing import CliRunner

    from kernbench import cli
    from kernbench import plan as planning
    from kernbench.commands import run as run_command
    from kernbench.errors import EXIT_OK

    bench = nap_bench(tmp_path, work_us=(1, 2, 3))
    monkeypatch.setattr(run_command, "measure", lambda run: EXIT_OK)
    made: list[str] = []
    every_cell = planning._every_cell
    monkeypatch.setattr(planning, "_every_cell",
                        lambda *args: made.append("plan") or every_cell(*args))
    timers = tmp_path / "timers.json"
    timers.write_text(json.dumps({"default/work_us=3": "cpu"}))
    builds = []
    for given in ([], ["--timers", str(timers)]):
        made.clear()
        result = CliRunner().invoke(cli.app, [
            "run", "--bench", str(bench), "--device", "cpu", "--only", "work_us=1",
            "--out", str(tmp_path / f"out{len(given)}"), *given])
        assert result.exit_code == EXIT_OK, result.output
        builds.append(len(made))
    # the cells run are chosen from the plan the ids are checked on
    assert builds[0] > 0 and builds[1] == builds[0]
