"""A call's wall time in an interleaved turn (kernbench.execute.call_wall), on a fake clock."""

from __future__ import annotations

import itertools

import pytest

from kernbench.execute.call_wall import (
    ESTIMATE_CALLS,
    REFINING_PAIRS,
    call_wall_s,
    estimate_call_wall,
)
from kernbench.timing.base import Measurement


def turns(per_call_s: float, own_s: list[float], sample_s: float, calls_seen: list[int]):
    """Turns that cost `own_s` in turn (cycled) plus `per_call_s` a call."""
    owns = itertools.cycle(own_s)

    def timed_turn(calls: int) -> tuple[float, Measurement]:
        calls_seen.append(calls)
        return next(owns) + per_call_s * calls, Measurement(
            timer="fake", samples_s=[sample_s] * calls, warmup_calls=1, stop_reason="max_samples")

    return timed_turn


def test_a_calls_wall_time_leaves_out_what_a_turn_costs_whatever_its_calls() -> None:
    # A 0.3 ms GEMM behind its flush: 0.36 ms a call, 2.5 ms a turn's own (run 4).
    short, long = 2.5e-3 + 5 * 0.36e-3, 2.5e-3 + 10 * 0.36e-3
    assert call_wall_s(short, 5, long, 10, 0.3e-3) == pytest.approx(0.36e-3)
    assert short / 5 == pytest.approx(0.86e-3)  # what the whole turn per call said
    # Jitter that makes the difference smaller than the timed work: the work.
    assert call_wall_s(3.0e-3, 5, 3.1e-3, 10, 0.3e-3) == pytest.approx(0.3e-3)
    # Never more than the long turn per call.
    assert call_wall_s(1e-3, 5, 9e-3, 10, 0.1e-3) == pytest.approx(0.9e-3)
    with pytest.raises(ValueError):
        call_wall_s(1e-3, 5, 2e-3, 5, 1e-4)


def test_many_calls_a_turn_are_estimated_over_turns_of_that_many_calls() -> None:
    # A 29 µs GEMM, 60 µs a call behind its flush; a turn's own cost is about 1 ms and
    # once 3.6 ms (run 7's range: 0.3-3.6 ms). The first pair (5 and 10 calls) reads
    # 0.42 ms a call, the most it may (the long turn's wall over its calls).
    seen: list[int] = []
    owns = [1.0e-3, 3.6e-3, 1.2e-3, 0.9e-3, 1.1e-3, 1.0e-3, 0.8e-3, 1.3e-3]
    first = estimate_call_wall(turns(60e-6, owns, 29e-6, seen), 29e-6)
    assert first.per_call_s == pytest.approx(0.42e-3) and seen == [5, 10]
    seen.clear()
    wall = estimate_call_wall(turns(60e-6, owns, 29e-6, seen), 29e-6, 5e-3, 256)
    assert len(seen) == 2 + 2 * REFINING_PAIRS and len(wall.measured) == len(seen)
    assert max(seen) > 50  # the later long turns are sized by the smaller estimates
    assert wall.per_call_s == pytest.approx(60e-6, rel=0.05)
    assert first.per_call_s / wall.per_call_s > 5


def test_without_jitter_the_refined_estimate_is_exact() -> None:
    seen: list[int] = []
    wall = estimate_call_wall(turns(60e-6, [1e-3], 29e-6, seen), 29e-6, 5e-3, 256)
    assert wall.per_call_s == pytest.approx(60e-6) and wall.own_s == pytest.approx(1e-3)
    assert seen[2::2] == [ESTIMATE_CALLS] * REFINING_PAIRS
    assert seen[3::2] == [round(5e-3 / 60e-6)] * REFINING_PAIRS


def test_long_calls_need_no_refining_and_long_turns_stay_bounded() -> None:
    seen: list[int] = []
    # a 2.5 ms GEMM: two calls fill a 5 ms turn, the first pair is all there is
    estimate_call_wall(turns(2.5e-3, [1e-3], 2.4e-3, seen), 2.4e-3, 5e-3, 256)
    assert seen == [5, 10]
    # a graph replay of 2 ms a call whose 3 µs samples floor the estimate: capped turns
    seen.clear()
    estimate_call_wall(turns(2e-3, [30e-3, 0.0], 3e-6, seen), 3e-6, 5e-3, 64)
    assert max(seen) <= 64
