"""The interleaved A/B schedule inside one round: which side takes which turn, how many
calls a turn holds, and the round's delta from the paired turns.

Pure: no processes, no clocks, no torch. Per round, the sides (A, B and, with A/A, A')
are live processes that take turns on the device, one cell at a time; a turn is a timed
batch of calls whose median is the turn's time. Turns come in blocks, one turn per side
a block; B and A' are each compared with the A turn of their own block, so a pair is a
few milliseconds apart and sees the same machine state (GPU speed moves in episodes of
0.1-1 s, far longer than a turn).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kernbench.results.ab import CellTurns
from kernbench.spec.ab_model import DEFAULT_TURN_MS
from kernbench.spec.timer_model import TimerSpec

REFERENCE = "A"  # the side every other side is compared with

# A turn's timed work: short enough that both turns of a pair see the same power state.
# Measured on an H200 (docs/ab-schedules.md): with 20 ms turns a 0.3 ms GEMM's turn
# medians jumped by up to 20% from turn to turn (power-cap episodes at the turn's own
# scale) and no-effect intervals were 2 to 5 points wide; with 5 ms turns they were
# 0.15 to 0.21 points, A/A floors 0.08 to 0.18%. The hand-over between processes (a
# pipe message and a wake-up, well under a millisecond) stays a small part of 5 ms.
TARGET_TURN_S = DEFAULT_TURN_MS / 1000
# The shortest turn planned, when the budget asks for shorter ones to reach MIN_PAIRS.
MIN_TURN_S = 2e-3
# A turn's median needs a few calls, however long one call is.
MIN_CALLS_PER_TURN = 3
# Bounds the events and samples a turn holds for kernels of a few microseconds.
MAX_CALLS_PER_TURN = 256
# Fewest turns per side (= pairs per comparison): the median of fewer paired deltas
# would let two unlucky turns move it.
MIN_PAIRS = 8
# Most turns per side: past this more pairs mostly add hand-overs (tiny kernels).
MAX_PAIRS = 96


@dataclass(frozen=True)
class Turn:
    block: int  # 0-based; each block holds one turn of every side
    position: int  # 0-based place inside its block
    side: str


@dataclass(frozen=True)
class TurnPlan:
    calls_per_turn: int
    turns_per_side: int
    sides: int
    per_call_s: float

    @property
    def turn_s(self) -> float:
        return self.calls_per_turn * self.per_call_s

    @property
    def sampled_s(self) -> float:
        """Seconds of timed calls for the cell on each side."""
        return self.turns_per_side * self.turn_s


def cycle_blocks(sides: int) -> int:
    """Blocks after which every position guarantee of `turn_order` holds exactly."""
    if sides == 2:
        return 2
    if sides == 3:
        return 6
    raise ValueError(f"interleaving takes 2 or 3 sides, not {sides}")


def block_rows(sides: Sequence[str]) -> list[tuple[str, ...]]:
    """One cycle of block orders: ABBA for two sides; for three, each rotation of the
    sides followed by its reverse (ABC CBA BCA ACB CAB BAC)."""
    names = tuple(sides)
    cycle_blocks(len(names))
    if len(set(names)) != len(names):
        raise ValueError(f"side names must differ: {names}")
    if len(names) == 2:
        return [names, names[::-1]]
    rows: list[tuple[str, ...]] = []
    for shift in range(len(names)):
        rotated = names[shift:] + names[:shift]
        rows += [rotated, rotated[::-1]]
    return rows


def turn_order(sides: Sequence[str], turns: int) -> list[Turn]:
    """The turns of one cell in order: `turns` blocks, one turn per side in each.

    Two sides (A, B): blocks alternate A B, B A (ABBA). Over every two blocks each side
    takes each position once, and a drift linear in time adds +e to one pair's delta and
    -e to the next, so it cancels.

    Three sides (A, B, A'): the blocks cycle through ABC CBA BCA ACB CAB BAC (each
    rotation, then its reverse; C is A'). Over every six blocks:
    - each side takes each position twice (positions balanced);
    - each side follows itself once (the C C, A A and B B at the reversals), so carry-over
      from the previous turn is shared alike;
    - B and A' are each paired with the A turn of their block: adjacent in four blocks of
      six, one turn apart in the other two, for B and for A' alike, so the A/B and A/A'
      comparisons have the same structure and the A/A floor measures what the A/B delta
      suffers;
    - a linear drift cancels in both comparisons (signed distances to A sum to zero).
    Adjacency in every block is impossible with one A turn a block: both B and A' next to
    A puts A always in the middle, which breaks the position balance.

    The guarantees hold exactly when `turns` is a multiple of `cycle_blocks`; `plan_turns`
    plans such counts.
    """
    if turns < 1:
        raise ValueError(f"turns must be at least 1, not {turns}")
    rows = block_rows(sides)
    order: list[Turn] = []
    for block in range(turns):
        row = rows[block % len(rows)]
        order += [Turn(block, position, side) for position, side in enumerate(row)]
    return order


def pair_deltas(
    turns: Mapping[tuple[int, str], float], reference: str = REFERENCE
) -> dict[str, list[float]]:
    """Paired log ratios log(side / reference) per block, block order, for every side but
    the reference: e.g. {"B": [log(B/A) ...], "AA": [log(A'/A) ...]}.

    `turns` maps (block, side) to the turn's median in seconds. A block without its
    reference turn contributes no pairs.
    """
    by_block: dict[int, dict[str, float]] = {}
    for (block, side), seconds in turns.items():
        if not seconds > 0:
            raise ValueError(f"turn ({block}, {side}) has a non-positive time {seconds}")
        by_block.setdefault(block, {})[side] = seconds
    deltas: dict[str, list[float]] = {}
    for block in sorted(by_block):
        times = by_block[block]
        base = times.get(reference)
        for side, seconds in times.items():
            if side != reference:
                pairs = deltas.setdefault(side, [])
                if base is not None:
                    pairs.append(math.log(seconds / base))
    return deltas


def round_delta(pairs: Sequence[float]) -> float:
    """One round's delta for one cell: the median of its paired deltas.

    The median, not the mean: a turn caught in a slow episode of the device (or preempted)
    moves one pair by a lot, and the median ignores it where the mean would carry it.
    Under ABBA a linear drift adds +e and -e to alternate pairs; the median of such a
    symmetric spread stays at the true delta.
    """
    if not pairs:
        raise ValueError("round_delta of no pairs")
    return float(statistics.median(pairs))


def plan_turns(
    per_call_s: float, spec: TimerSpec, sides: int = 2, target_turn_s: float = TARGET_TURN_S
) -> TurnPlan:
    """Calls per turn and turns per side for one cell, from the wall time one call adds to
    a turn (as the side measured it when it prepared the cell: its L2 flush, its launch,
    and for a graph-timed cell the whole replay of its launches; not the turn's own cost,
    ADR 0022 addendum) and the cell's timer settings. Turns are wall-clock slots the
    sides take in turn, and `budget_s` pays for their calls' wall time.

    A turn aims at `target_turn_s` (TARGET_TURN_S unless the A/B asks for another),
    shortened down to MIN_TURN_S when the budget could not otherwise hold MIN_PAIRS turns
    per side, and holds MIN_CALLS_PER_TURN to
    MAX_CALLS_PER_TURN calls. Turns per side: as many as `spec.budget_s` pays for on each
    side (a side samples as long as it would in a run of its own, so both schedules spend
    the same device time on samples), rounded down to whole cycles of `turn_order`, but at
    least MIN_PAIRS (rounded up to a cycle) and at most MAX_PAIRS. So the budget is kept
    unless the floor of pairs or of calls needs more. Each side gets at least
    `spec.min_samples` calls and at most `spec.max_samples` (which overrides
    MIN_CALLS_PER_TURN, not MIN_PAIRS).
    """
    if not per_call_s > 0:
        raise ValueError(f"per_call_s must be positive, not {per_call_s}")
    cycle = cycle_blocks(sides)
    fewest = _round_up(MIN_PAIRS, cycle)
    most = max(_round_down(MAX_PAIRS, cycle), fewest)
    turn_s = min(max(spec.budget_s / fewest, min(MIN_TURN_S, target_turn_s)), target_turn_s)
    calls = _clamp(round(turn_s / per_call_s), MIN_CALLS_PER_TURN, MAX_CALLS_PER_TURN)
    affordable = int(spec.budget_s / (calls * per_call_s))
    turns = _clamp(_round_down(affordable, cycle), fewest, most)
    calls = max(calls, math.ceil(spec.min_samples / turns))
    if calls * turns > spec.max_samples:  # fewer turns first, then fewer calls a turn
        turns = max(_round_down(spec.max_samples // calls, cycle), fewest)
        calls = max(min(calls, spec.max_samples // turns), 1)
    return TurnPlan(calls, turns, sides, per_call_s)


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, high))


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _round_down(value: int, step: int) -> int:
    return value // step * step


def cell_pairs(turns: CellTurns, side: str) -> list[float]:
    """A cell's paired deltas log(side/A) in one round, block order, from its record."""
    medians = dict(zip(zip(turns.blocks, turns.sides, strict=True), turns.medians_s,
                       strict=True))
    return pair_deltas(medians).get(side, [])


def order_split(turns: CellTurns, side: str) -> tuple[list[float], list[float]]:
    """The paired deltas of blocks where A went first, and of blocks where `side` did:
    their difference is the order effect (a turn that follows another runs warmer)."""
    first: dict[int, str] = {}
    medians: dict[tuple[int, str], float] = {}
    for block, who, median in zip(turns.blocks, turns.sides, turns.medians_s, strict=True):
        medians[block, who] = median
        if who in (REFERENCE, side):
            first.setdefault(block, who)
    a_first: list[float] = []
    side_first: list[float] = []
    for block, who in first.items():
        if (block, REFERENCE) in medians and (block, side) in medians:
            delta = math.log(medians[block, side] / medians[block, REFERENCE])
            (a_first if who == REFERENCE else side_first).append(delta)
    return a_first, side_first
