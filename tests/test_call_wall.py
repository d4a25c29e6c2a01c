"""A call's wall time in an interleaved turn (kernbench.execute.call_wall), on a fake clock."""

from __future__ import annotations

import pytest

from kernbench.execute.call_wall import ESTIMATE_CALLS, call_wall_s, estimate_call_wall
from kernbench.timing.base import Measurement


def turns(per_call_s: float, own_s: float, sample_s: float, calls_seen: list[int]):
    """Turns that cost `own_s` plus `per_call_s` a call."""

    def timed_turn(calls: int) -> tuple[float, Measurement]:
        calls_seen.append(calls)
        return own_s + per_call_s * calls, Measurement(
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


def test_the_estimate_is_the_difference_of_a_short_and_a_long_turn() -> None:
    seen: list[int] = []
    wall = estimate_call_wall(turns(60e-6, 1e-3, 29e-6, seen))
    assert seen == [ESTIMATE_CALLS, 2 * ESTIMATE_CALLS] and len(wall.measured) == 2
    assert wall.per_call_s == pytest.approx(60e-6) and wall.own_s == pytest.approx(1e-3)
