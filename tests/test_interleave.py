from __future__ import annotations

import math
from collections import Counter

import pytest

from kernbench.ab.interleave import (
    MAX_CALLS_PER_TURN,
    MAX_PAIRS,
    MIN_CALLS_PER_TURN,
    MIN_PAIRS,
    MIN_TURN_S,
    TARGET_TURN_S,
    Turn,
    block_rows,
    cycle_blocks,
    pair_deltas,
    plan_turns,
    round_delta,
    turn_order,
)
from kernbench.spec.timer_model import TimerSpec

TWO = ("A", "B")
THREE = ("A", "B", "AA")


def blocks_of(order: list[Turn]) -> list[tuple[str, ...]]:
    rows: dict[int, list[str]] = {}
    for turn in order:
        rows.setdefault(turn.block, []).append(turn.side)
    return [tuple(rows[block]) for block in sorted(rows)]


def test_two_sides_alternate_abba():
    assert blocks_of(turn_order(TWO, 4)) == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]


def test_three_sides_cycle_rotations_and_their_reverses():
    assert block_rows(("A", "B", "C")) == [
        ("A", "B", "C"), ("C", "B", "A"),
        ("B", "C", "A"), ("A", "C", "B"),
        ("C", "A", "B"), ("B", "A", "C"),
    ]  # fmt: skip


@pytest.mark.parametrize("sides", [TWO, THREE])
@pytest.mark.parametrize("cycles", [1, 2, 5])
def test_each_side_takes_each_position_equally_often(sides, cycles):
    turns = cycles * cycle_blocks(len(sides))
    order = turn_order(sides, turns)
    counts = Counter((turn.side, turn.position) for turn in order)
    assert set(counts.values()) == {turns // len(sides)}
    assert len(counts) == len(sides) ** 2


@pytest.mark.parametrize("sides", [TWO, THREE])
@pytest.mark.parametrize("turns", [1, 2, 7, 12])
def test_every_side_gets_the_asked_turns_one_per_block(sides, turns):
    order = turn_order(sides, turns)
    assert Counter(turn.side for turn in order) == {side: turns for side in sides}
    for row in blocks_of(order):
        assert sorted(row) == sorted(sides)
    assert [(t.block, t.position) for t in order] == sorted((t.block, t.position) for t in order)


def distances_to_reference(order: list[Turn], side: str) -> list[int]:
    """Per block: the side's position minus the A turn's (signed)."""
    where: dict[tuple[int, str], int] = {(t.block, t.side): t.position for t in order}
    blocks = sorted({t.block for t in order})
    return [where[(block, side)] - where[(block, "A")] for block in blocks]


def test_two_sides_pairs_are_adjacent_and_linear_drift_cancels():
    distances = distances_to_reference(turn_order(TWO, 8), "B")
    assert {abs(d) for d in distances} == {1}
    assert sum(distances) == 0


def test_three_sides_pair_b_and_aprime_alike_with_a_of_their_block():
    order = turn_order(THREE, 12)
    b = distances_to_reference(order, "B")
    aa = distances_to_reference(order, "AA")
    for distances in (b, aa):
        assert max(abs(d) for d in distances) <= 2
        assert Counter(abs(d) for d in distances) == {1: 8, 2: 4}  # adjacent in 4 of 6
        assert sum(distances) == 0  # a linear drift cancels over the cycles


def test_three_sides_each_side_follows_itself_equally_often():
    sides = [t.side for t in turn_order(THREE, 12)]
    repeats = Counter(a for a, b in zip(sides, sides[1:], strict=False) if a == b)
    assert repeats == {"A": 2, "B": 2, "AA": 2}


@pytest.mark.parametrize("sides", [("A",), ("A", "B", "C", "D")])
def test_only_two_or_three_sides(sides):
    with pytest.raises(ValueError, match="2 or 3 sides"):
        turn_order(sides, 2)


def test_side_names_must_differ_and_turns_be_positive():
    with pytest.raises(ValueError, match="must differ"):
        turn_order(("A", "A"), 2)
    with pytest.raises(ValueError, match="at least 1"):
        turn_order(TWO, 0)


def test_pair_deltas_are_log_ratios_against_a_per_block():
    turns = {
        (0, "A"): 1.0, (0, "B"): 1.1, (0, "AA"): 1.0,
        (1, "B"): 2.2, (1, "A"): 2.0, (1, "AA"): 1.9,
    }  # fmt: skip
    deltas = pair_deltas(turns)
    assert deltas.keys() == {"B", "AA"}
    assert deltas["B"] == pytest.approx([math.log(1.1), math.log(1.1)])
    assert deltas["AA"] == pytest.approx([0.0, math.log(0.95)])


def test_pair_deltas_skip_a_block_without_its_reference_turn():
    deltas = pair_deltas({(0, "A"): 1.0, (0, "B"): 2.0, (1, "B"): 3.0})
    assert deltas == {"B": [pytest.approx(math.log(2.0))]}


def test_pair_deltas_reject_non_positive_times():
    with pytest.raises(ValueError, match="non-positive"):
        pair_deltas({(0, "A"): 0.0, (0, "B"): 1.0})


def test_round_delta_is_the_median_and_ignores_one_slow_turn():
    pairs = [0.02, 0.021, 0.019, 0.5, 0.02]  # one pair caught in a slow episode
    assert round_delta(pairs) == pytest.approx(0.02)
    with pytest.raises(ValueError):
        round_delta([])


def test_round_delta_of_alternating_linear_drift_is_the_true_delta():
    true, drift = 0.03, 0.01
    pairs = [true + drift * (-1) ** k for k in range(8)]
    assert round_delta(pairs) == pytest.approx(true)


def spec(**fields) -> TimerSpec:
    return TimerSpec(**fields)


def test_plan_aims_at_the_target_turn_and_keeps_the_budget():
    plan = plan_turns(100e-6, spec(budget_s=1.0), sides=2)
    assert plan.turn_s == pytest.approx(TARGET_TURN_S)
    assert plan.calls_per_turn == round(TARGET_TURN_S / 100e-6)
    assert plan.turns_per_side % cycle_blocks(2) == 0
    assert MIN_PAIRS <= plan.turns_per_side <= MAX_PAIRS
    assert plan.sampled_s <= 1.0


def test_plan_shortens_turns_before_giving_up_the_budget():
    plan = plan_turns(100e-6, spec(budget_s=0.036), sides=3)
    assert plan.turns_per_side == 12  # MIN_PAIRS rounded up to a cycle of 6
    assert MIN_TURN_S <= plan.turn_s < TARGET_TURN_S
    assert plan.sampled_s <= 0.036 * 1.01


def test_each_side_samples_for_the_budget_as_in_a_run_of_its_own():
    two = plan_turns(100e-6, spec(budget_s=0.6), sides=2)
    three = plan_turns(100e-6, spec(budget_s=0.6), sides=3)
    for plan in (two, three):
        assert 0.6 * 0.6 <= plan.sampled_s <= 0.6


def test_plan_keeps_the_floor_of_pairs_and_calls_for_long_kernels():
    plan = plan_turns(30e-3, spec(budget_s=0.5), sides=2)
    assert plan.calls_per_turn == MIN_CALLS_PER_TURN
    assert plan.turns_per_side == MIN_PAIRS
    assert plan.sampled_s > 0.5  # the floor wins over the budget


def test_plan_caps_calls_and_turns_for_tiny_kernels():
    plan = plan_turns(1e-6, spec(budget_s=5.0), sides=2)
    assert plan.calls_per_turn == MAX_CALLS_PER_TURN
    assert plan.turns_per_side == MAX_PAIRS


def test_plan_gives_each_side_its_min_samples_and_no_more_than_max_samples():
    many = plan_turns(30e-3, spec(budget_s=0.5, min_samples=50), sides=2)
    assert many.calls_per_turn * many.turns_per_side >= 50
    few = plan_turns(100e-6, spec(budget_s=1.0, min_samples=3, max_samples=40), sides=2)
    assert few.calls_per_turn * few.turns_per_side <= 40


def test_plan_rejects_a_non_positive_call_time():
    with pytest.raises(ValueError, match="positive"):
        plan_turns(0.0, spec(), sides=2)
