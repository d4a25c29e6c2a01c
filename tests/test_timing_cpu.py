"""The CPU timer's inner loop, on a fake clock: a sample lasts at least `min_sample_s`, and
reports the time per call."""

from __future__ import annotations

import pytest

from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.cpu import MIN_SAMPLE_S, CpuTimer, loop_counts


class FakeClock:
    """perf_counter_ns that moves only when the kernel runs: call k costs `call_ns`, or the
    k-th of a cycle of costs."""

    def __init__(self, call_ns: int | list[int]) -> None:
        self.now = 0
        self.costs = call_ns if isinstance(call_ns, list) else [call_ns]
        self.calls = 0

    def __call__(self) -> int:
        return self.now

    def run(self) -> None:
        self.now += self.costs[self.calls % len(self.costs)]
        self.calls += 1


def spec(**changes: object) -> TimerSpec:
    return TimerSpec.model_validate({"warmup_s": 0.0, "min_samples": 10, **changes})


def measure(call_ns: int | list[int], kernel: Kernel | None = None, **changes: object) -> tuple:
    clock = FakeClock(call_ns)
    measured = CpuTimer(clock).measure(kernel or Kernel(run=clock.run), spec(**changes))
    return measured, clock


def test_the_loop_counts_run_one_two_five() -> None:
    assert list(loop_counts(150)) == [1, 2, 5, 10, 20, 50, 100, 150]
    assert list(loop_counts(1)) == [1]


@pytest.mark.parametrize(
    ("call_ns", "loops"),
    [(1_000, 100), (30_000, 5), (100_000, 1), (2_000_000, 1), (40, 5_000)],
)
def test_a_sample_lasts_at_least_the_minimum(call_ns: int, loops: int) -> None:
    measured, _ = measure(call_ns)
    assert measured.extra["loops"] == loops
    assert loops * call_ns >= MIN_SAMPLE_S * 1e9
    # Each sample is the time per call, whatever the loop.
    assert measured.samples_s == pytest.approx([call_ns * 1e-9] * len(measured.samples_s))
    assert measured.stop_reason == "converged" and len(measured.samples_s) == 10


def test_the_calls_spent_calibrating_are_not_samples() -> None:
    measured, clock = measure(1_000)
    calibration = 1 + 2 + 5 + 10 + 20 + 50 + 100
    assert clock.calls == measured.warmup_calls + calibration + 100 * len(measured.samples_s)


def test_the_budget_is_wall_time_of_whole_loops() -> None:
    # Costs of 1.0 to 2.0 µs in a cycle of 97: the means of 100 calls differ, never converge.
    costs = [1_000 + (k * 37 % 97) * 10 for k in range(97)]
    measured, _ = measure(costs, rel_ci=1e-9, budget_s=0.01)
    assert (measured.stop_reason, measured.extra["loops"]) == ("budget", 100)
    spent = sum(measured.samples_s) * 100
    assert 0.01 <= spent < 0.01 + 2e-4
    assert len(set(measured.samples_s)) > 1
    assert all(1.4e-6 < s < 1.6e-6 for s in measured.samples_s)


def test_a_kernel_with_stages_is_timed_a_call_at_a_time() -> None:
    clock = FakeClock(1_000)
    kernel = Kernel(run=clock.run, stages=("a", "b"), stage_times=lambda: {"a": 1e-7, "b": 9e-7})
    measured = CpuTimer(clock).measure(kernel, spec())
    assert measured.extra["loops"] == 1
    assert measured.stages_s["a"] == [1e-7] * len(measured.samples_s)


def test_a_fixed_number_of_samples_is_a_fixed_number_of_calls() -> None:
    # An interleaved A/B turn asks for exactly N samples, sized as N calls.
    measured, clock = measure(1_000, min_samples=7, max_samples=7, rel_ci=1e-9)
    assert (measured.extra["loops"], len(measured.samples_s)) == (1, 7)
    assert clock.calls == measured.warmup_calls + 7


def test_synchronize_follows_every_call() -> None:
    clock = FakeClock(1_000)
    synced: list[int] = []
    kernel = Kernel(run=clock.run, synchronize=lambda: synced.append(clock.calls))
    CpuTimer(clock).measure(kernel, spec())
    assert synced == list(range(1, clock.calls + 1))


def test_a_call_the_clock_cannot_see_stops_at_the_loop_limit() -> None:
    clock = FakeClock(0)
    measured = CpuTimer(clock, max_loops=300).measure(Kernel(run=clock.run), spec())
    assert measured.extra["loops"] == 300


def test_no_minimum_means_one_call_per_sample() -> None:
    clock = FakeClock(1_000)
    measured = CpuTimer(clock, min_sample_s=0).measure(Kernel(run=clock.run), spec())
    assert measured.extra["loops"] == 1
