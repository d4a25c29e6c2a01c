"""What one more call adds to the wall time of an interleaved A/B's turn, measured when a
side prepares a cell; the parent sizes the cell's turns by it (`ab.interleave.plan_turns`).

A turn also costs something whatever its calls (its untimed call, the syncs, the pipe):
2-3 ms on an H200, varying by as much from turn to turn. So the estimate is a difference
of two timed turns, and where a turn holds many calls the difference is taken again over
turns of about that many calls, so the calls' part outweighs that variation (ADR 0063).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from kernbench.timing.base import Measurement

# Calls in the short estimating turn, and twice that in the first long one.
ESTIMATE_CALLS = 5
# Further pairs of turns when a turn fits more than 2 * ESTIMATE_CALLS calls: one pair of 5
# and 10 calls of a 29 µs GEMM differ by ~0.3 ms against a turn's own cost that varied
# over 0.3-3.6 ms, and sized that cell's turns anywhere from 14 to 172 calls (run 7).
REFINING_PAIRS = 3

TimedTurn = Callable[[int], tuple[float, Measurement]]


@dataclass(frozen=True)
class CallWall:
    per_call_s: float  # what one more call adds to a turn
    own_s: float  # what a turn costs whatever its calls
    measured: list[Measurement]  # every estimating turn, for the cell's warm-up count


def call_wall_s(short_s: float, short_calls: int, long_s: float, long_calls: int,
                sample_s: float) -> float:
    """What one more call adds to a turn's wall time, from two timed turns of
    `short_calls` and `long_calls` calls. A whole turn divided by its calls counted the
    turn's own cost in every call, and sized a 0.3 ms GEMM's turns at 6 calls where 16 fit
    (docs/ab-schedules.md, run 4). At least `sample_s`, the call's own timed median (host
    jitter can make the difference smaller than the work), and at most the long turn's
    wall per call."""
    if not 0 < short_calls < long_calls:
        raise ValueError(f"need 0 < short_calls < long_calls, not {short_calls}, {long_calls}")
    marginal = (long_s - short_s) / (long_calls - short_calls)
    return min(max(marginal, sample_s), long_s / long_calls)


def _pair(timed_turn: TimedTurn, long_calls: int, sample_s: float,
          measured: list[Measurement]) -> tuple[float, float]:
    """One short and one long turn: (a call's wall time, the turn's own cost)."""
    short_s, short = timed_turn(ESTIMATE_CALLS)
    long_s, long = timed_turn(long_calls)
    measured += [short, long]
    per_call = call_wall_s(short_s, len(short.samples_s), long_s, len(long.samples_s),
                           sample_s)
    return per_call, short_s - len(short.samples_s) * per_call


def estimate_call_wall(timed_turn: TimedTurn, sample_s: float, turn_s: float | None = None,
                       max_calls: int | None = None) -> CallWall:
    """A call's wall time in a turn, from `timed_turn(calls)` (the wall time of a turn of
    that many calls, and its measurement). `turn_s`, `max_calls`: the turns the parent aims
    at (not given: the first pair alone). Where such a turn fits more than
    2 * ESTIMATE_CALLS calls (at most `max_calls` counted), REFINING_PAIRS more
    pairs, each long turn sized by the smallest estimate so far (an estimate too large
    sizes the next pair too short to correct it), and the median of those pairs is kept."""
    measured: list[Measurement] = []
    per_call, own = _pair(timed_turn, 2 * ESTIMATE_CALLS, sample_s, measured)
    sizing, refined = per_call, list[tuple[float, float]]()
    while turn_s is not None and max_calls is not None and len(refined) < REFINING_PAIRS:
        long_calls = min(round(turn_s / sizing), max_calls)
        if long_calls <= 2 * ESTIMATE_CALLS:
            break
        refined.append(_pair(timed_turn, long_calls, sample_s, measured))
        sizing = min(sizing, refined[-1][0])
    if refined:
        per_call = statistics.median(p for p, _ in refined)
        own = statistics.median(o for _, o in refined)
    return CallWall(per_call, own, measured)
