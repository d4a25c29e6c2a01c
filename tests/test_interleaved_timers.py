"""One timer per cell across an interleaved A/B's sides and rounds."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kernbench.ab.interleave import plan_turns
from kernbench.ab.interleaved import chosen_timers, turn_cell
from kernbench.ab.outcomes import turns_path
from kernbench.ab.pairing import CellPair
from kernbench.plan import Cell
from kernbench.results.ab import TURNS_FORMAT, CellTurns, RoundTurns
from kernbench.spec.timer_model import TimerSpec


class ScriptedSide:
    """A side whose own auto choice would be `own_timer`; it takes the one it is given."""

    def __init__(self, name: str, own_timer: str, wall_per_call_s: float = 1e-3) -> None:
        self.run = SimpleNamespace(side=name, name=f"r1_{name}")
        self.gone = None
        self.own_timer = own_timer
        self.wall_per_call_s = wall_per_call_s
        self.prepared_with: list[str | None] = []
        self.cells_asked: set[int] = set()

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.cells_asked.add(request["cell"])
        if request["op"] == "prepare":
            self.prepared_with.append(request.get("timer"))
            return {"ok": True, "wall_per_call_s": self.wall_per_call_s,
                    "timer": request.get("timer", self.own_timer)}
        if request["op"] == "turn":
            return {"ok": True, "median_s": 3e-6, "n": request["calls"]}
        return {"ok": True}


_ONE = Cell("flag_gems", {"tokens": 1}, {"tokens": 1}, index=0)
CELL = CellPair(_ONE.id, _ONE, _ONE)
SPEC = TimerSpec(budget_s=0.05, min_samples=3)


def test_the_first_side_chooses_the_timer_and_the_others_are_given_it() -> None:
    # On the H200 two of eighteen processes timed a 3 µs topk with events where the rest
    # used graphs (auto's eager estimate crossed its threshold on a busy host): +172%.
    a, b, aa = ScriptedSide("A", "graph"), ScriptedSide("B", "event"), ScriptedSide("AA1", "event")
    turns = turn_cell([a, b, aa], CELL, SPEC, time.perf_counter())  # type: ignore[arg-type]
    assert turns.timer == "graph" and turns.reason is None
    assert a.prepared_with == [None] and b.prepared_with == aa.prepared_with == ["graph"]


def test_turns_are_sized_by_the_sides_median_estimate_of_a_call() -> None:
    # A's host stalled while it estimated: 9 ms a call where the others read ~1 ms.
    sides = [ScriptedSide("A", "event", 9e-3), ScriptedSide("B", "event", 1.0e-3),
             ScriptedSide("AA1", "event", 1.1e-3)]
    turns = turn_cell(sides, CELL, SPEC, time.perf_counter())  # type: ignore[arg-type]
    plan = plan_turns(1.1e-3, SPEC, sides=3)
    assert (turns.calls_per_turn, turns.turns_per_side) == (plan.calls_per_turn,
                                                            plan.turns_per_side)
    assert plan.calls_per_turn > plan_turns(9e-3, SPEC, sides=3).calls_per_turn


def test_a_timer_chosen_in_an_earlier_round_is_given_to_every_side() -> None:
    sides = [ScriptedSide("B", "graph"), ScriptedSide("A", "graph")]
    turns = turn_cell(sides, CELL, SPEC, time.perf_counter(), timer="event")  # type: ignore[arg-type]
    assert turns.timer == "event"
    assert all(side.prepared_with == ["event"] for side in sides)


def test_in_an_ab_of_two_variants_each_side_is_asked_for_its_own_cell() -> None:
    torch = Cell("torch", {"M": 64}, {"M": 64, "backend": "torch"}, index=3)
    triton = Cell("triton", {"M": 64}, {"M": 64, "backend": "triton"}, index=7)
    sides = [ScriptedSide("A", "event"), ScriptedSide("B", "event"), ScriptedSide("AA1", "event")]
    turns = turn_cell(sides, CellPair("torch-vs-triton/M=64", torch, triton), SPEC,  # type: ignore[arg-type]
                      time.perf_counter())
    assert turns.reason is None and set(turns.sides) == {"A", "B", "AA1"}
    assert [side.cells_asked for side in sides] == [{3}, {7}, {3}]


def test_the_earliest_other_rounds_choice_is_kept(tmp_path: Path) -> None:
    def write(round_: int, **timers: str | None) -> None:
        cells = {cell_id: CellTurns(timer=timer) for cell_id, timer in timers.items()}
        TURNS_FORMAT.write(turns_path(tmp_path, round_),
                           RoundTurns(round=round_, runs={}, cells=cells))

    write(1, x="graph", y=None)  # y: no side could prepare it in round 1
    write(2, x="event", y="event")
    assert chosen_timers(tmp_path, current=3, rounds=6) == {"x": "graph", "y": "event"}
    assert chosen_timers(tmp_path, current=2, rounds=6) == {"x": "graph"}
    # a resume that runs round 1 again keeps what the rounds it kept chose
    assert chosen_timers(tmp_path, current=1, rounds=6) == {"x": "event", "y": "event"}
