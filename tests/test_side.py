"""The side protocol (kernbench.execute.side), served in this process: no pipes, no GPU."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from kernbench.execute.journal import Task, read_entry
from kernbench.execute.side import Side, serve, turn_spec
from kernbench.spec.timer_model import TimerSpec

BENCH = """\
name: side-test
description: one busy-wait cell
kernel: sleep
axes:
  work_us: [50]
timer: {warmup_s: 0.001, budget_s: 0.01, min_samples: 3}
"""


def side_for(tmp_path: Path) -> Side:
    bench = tmp_path / "side.yaml"
    bench.write_text(BENCH)
    task = Task(bench_path=str(bench), round=1, device="cpu", cells=[0],
                journal_dir=str(tmp_path / "journal"), pins_read=[], pins_write=[],
                pins_mode="auto")
    return Side(task)


def talk(side: Side, *requests: dict) -> list[dict]:
    replies = io.StringIO()
    serve(side, [json.dumps(r) + "\n" for r in requests], replies)
    return [json.loads(line) for line in replies.getvalue().splitlines()]


def test_a_cell_is_prepared_turned_and_journaled_with_only_its_kept_turns(tmp_path):
    side = side_for(tmp_path)
    prepared, warm, first, second, finished = talk(
        side,
        {"op": "prepare", "cell": 0},
        {"op": "turn", "cell": 0, "calls": 4, "keep": False},
        {"op": "turn", "cell": 0, "calls": 5},
        {"op": "turn", "cell": 0, "calls": 5},
        {"op": "finish", "cell": 0},
    )
    assert prepared["ok"] and 40e-6 < prepared["wall_per_call_s"] < 5e-2
    assert warm["ok"] and first["ok"] and second["ok"] and finished["ok"]
    entry = read_entry(tmp_path / "journal", 1, 0)
    assert entry is not None and entry.result.status == "ok"
    assert len(entry.result.samples_s) == 10  # the untimed-for-the-record turn is left out
    assert entry.result.stop_reason == "turns"
    assert entry.result.extra["turn_medians_s"] == [first["median_s"], second["median_s"]]


def test_requests_the_side_cannot_serve_get_a_reason_not_a_crash(tmp_path):
    side = side_for(tmp_path)
    unknown, unprepared = talk(side, {"op": "dance"}, {"op": "turn", "cell": 0, "calls": 3})
    assert unknown == {"ok": False, "reason": "unknown request 'dance'"}
    assert unprepared == {"ok": False, "reason": "cell 0 is not prepared"}


def test_a_cell_finished_without_turns_is_journaled_failed_with_the_parents_reason(tmp_path):
    side = side_for(tmp_path)
    talk(side, {"op": "prepare", "cell": 0},
         {"op": "finish", "cell": 0, "reason": "side B could not prepare the cell: boom"})
    entry = read_entry(tmp_path / "journal", 1, 0)
    assert entry is not None and entry.result.status == "failed"
    assert entry.result.reason == "not timed: side B could not prepare the cell: boom"


def test_a_turn_takes_exactly_its_calls_and_no_warm_up_beyond_one_call():
    spec = turn_spec(TimerSpec(warmup_s=0.5, settle_s=0.5, budget_s=0.01, rel_ci=0.5), 7)
    assert (spec.min_samples, spec.max_samples, spec.warmup_s, spec.settle_s) == (7, 7, 0.0, 0.0)
    assert turn_spec(TimerSpec(), 1).max_samples == 3  # the timers' floor


def test_the_cell_settles_once_while_prepared_and_its_result_says_so(tmp_path, monkeypatch):
    # Turns take no settle phase; the settle of the preparing measurement is the cell's.
    from kernbench.execute import side as side_module
    from kernbench.timing.base import Measurement

    asked: list[float] = []

    class SettlingTimer:
        name = "fake"

        def measure(self, kernel, spec):
            asked.append(spec.settle_s)
            settle = {"settled": True, "seconds": 0.04, "calls": 9} if spec.settle_s else None
            return Measurement(timer="fake", samples_s=[1e-4] * spec.min_samples,
                               warmup_calls=1, stop_reason="max_samples", settle=settle)

    monkeypatch.setattr(side_module, "choose_timer", lambda *args: SettlingTimer())
    side = side_for(tmp_path)
    talk(side, {"op": "prepare", "cell": 0}, {"op": "turn", "cell": 0, "calls": 4},
         {"op": "turn", "cell": 0, "calls": 4}, {"op": "finish", "cell": 0})
    assert asked[0] > 0 and asked[1:] == [0.0] * 4  # two wall estimates, two turns
    entry = read_entry(tmp_path / "journal", 1, 0)
    assert entry is not None and entry.result.settle == {"settled": True, "seconds": 0.04,
                                                         "calls": 9}
    assert entry.result.warmup_calls == 23  # 1 + 5, then the wall estimates 1 + 5 and 1 + 10


def test_prepare_reports_a_calls_wall_time_beside_its_sample(tmp_path, monkeypatch):
    # A graph-timed sample reads a few microseconds per launch while its replay, each
    # launch behind a flush, takes milliseconds: the parent sizes turns by the wall time.
    from kernbench.execute import side as side_module
    from kernbench.timing.base import Measurement

    class ReplayingTimer:
        name = "fake"

        def measure(self, kernel, spec):
            time.sleep(0.002 * spec.min_samples)
            return Measurement(timer="fake", samples_s=[3e-6] * spec.min_samples,
                               warmup_calls=1, stop_reason="max_samples")

    monkeypatch.setattr(side_module, "choose_timer", lambda *args: ReplayingTimer())
    (prepared,) = talk(side_for(tmp_path), {"op": "prepare", "cell": 0})
    # Turns are sized by a call's wall time (2 ms here, give or take the sleeps' jitter
    # between the two timed turns), not its 3 µs sample.
    assert 0.001 <= prepared["wall_per_call_s"] < 0.02


def test_prepare_leaves_a_turns_own_cost_out_of_a_calls_wall_time(tmp_path, monkeypatch):
    # On a clock the fake timer moves: each turn costs 2.5 ms whatever its calls (its
    # untimed call, first hold, syncs) and 0.36 ms a call, a 0.3 ms GEMM behind its flush.
    import types

    from kernbench.execute import side as side_module
    from kernbench.timing.base import Measurement

    clock = [0.0]

    class TurnCostTimer:
        name = "fake"

        def measure(self, kernel, spec):
            clock[0] += 2.5e-3 + 0.36e-3 * spec.min_samples
            return Measurement(timer="fake", samples_s=[0.3e-3] * spec.min_samples,
                               warmup_calls=1, stop_reason="max_samples")

    monkeypatch.setattr(side_module, "choose_timer", lambda *args: TurnCostTimer())
    monkeypatch.setattr(side_module, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    (prepared,) = talk(side_for(tmp_path), {"op": "prepare", "cell": 0})
    # Five calls' wall over five would say 0.86 ms, and fit 6 calls in a 5 ms turn, not 14.
    assert prepared["wall_per_call_s"] == pytest.approx(0.36e-3)


def test_prepare_times_with_the_timer_the_ab_chose(tmp_path, monkeypatch):
    from kernbench.execute import side as side_module
    from kernbench.timing.base import Measurement

    kinds: list[str | None] = []

    class Recorded:
        name = "fake"

        def measure(self, kernel, spec):
            return Measurement(timer="fake", samples_s=[1e-4] * spec.min_samples,
                               warmup_calls=1, stop_reason="max_samples")

    def choose(kernel, spec, device, chosen=None):
        kinds.append(chosen)
        return Recorded()

    monkeypatch.setattr(side_module, "choose_timer", choose)
    side = side_for(tmp_path)
    talk(side, {"op": "prepare", "cell": 0, "timer": "event"}, {"op": "finish", "cell": 0},
         {"op": "prepare", "cell": 0}, {"op": "finish", "cell": 0},
         {"op": "prepare", "cell": 0, "timer": "collective"})
    # the A/B's choice reaches the timer's choice (which ignores a name it has no timer for)
    assert kinds == ["event", None, "collective"]
