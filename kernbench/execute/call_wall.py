"""What one more call adds to the wall time of an interleaved A/B's turn, measured when a
side prepares a cell; the parent sizes the cell's turns by it (`ab.interleave.plan_turns`,
from the median of the sides' estimates, ADR 0063).

A turn also costs something whatever its calls (its untimed call, the syncs): about 1 ms
on an H200, varying by as much from turn to turn. So the estimate is the difference of two
timed turns, not one turn's wall over its calls.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from kernbench.timing.base import Measurement

# Calls in the short estimating turn; the long one takes twice as many.
ESTIMATE_CALLS = 5

TimedTurn = Callable[[int], tuple[float, Measurement]]


@dataclass(frozen=True)
class CallWall:
    per_call_s: float  # what one more call adds to a turn
    own_s: float  # what a turn costs whatever its calls
    measured: list[Measurement]  # the estimating turns, for the cell's warm-up count


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


def estimate_call_wall(timed_turn: TimedTurn) -> CallWall:
    """A call's wall time in a turn, from `timed_turn(calls)` (the wall time of a turn of
    that many calls, and its measurement): turns of ESTIMATE_CALLS and twice as many, at
    least the long turn's median sample."""
    short_s, short = timed_turn(ESTIMATE_CALLS)
    long_s, long = timed_turn(2 * ESTIMATE_CALLS)
    per_call = call_wall_s(short_s, len(short.samples_s), long_s, len(long.samples_s),
                           statistics.median(long.samples_s))
    return CallWall(per_call, short_s - len(short.samples_s) * per_call, [short, long])
