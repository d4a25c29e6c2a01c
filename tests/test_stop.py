"""The one stop rule every timer uses (kernbench.timing.stop)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.analyze.stats import rel_ci_halfwidth
from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import Measurement, stop
from kernbench.timing.cpu import CpuTimer
from kernbench.timing.stop import StopRule, stop_reason

STEADY = [1.0] * 12
NOISY = [1.0 + (i * 0.618034) % 1 for i in range(400)]  # never converges at rel_ci 1e-6


def spec(**fields: float) -> TimerSpec:
    return TimerSpec(**{"min_samples": 6, "max_samples": 20, "budget_s": 1.0, **fields})


def test_nothing_stops_before_min_samples_even_with_the_budget_spent() -> None:
    assert stop_reason(STEADY[:5], 2.0, spec()) is None
    assert stop_reason(NOISY[:5], 2.0, spec(max_samples=6)) is None


def test_steady_samples_converge_once_the_median_has_an_interval() -> None:
    assert stop_reason(STEADY[:6], 0.1, spec(min_samples=3)) == "converged"
    # Five values have no 95% interval of the median: not converged, whatever rel_ci.
    assert stop_reason(STEADY[:5], 0.1, spec(min_samples=3, rel_ci=0.999)) is None


def test_converged_waits_for_min_time_s_and_the_budget_still_stops() -> None:
    steady = spec(min_samples=3, min_time_s=0.5, max_samples=100)
    assert stop_reason(STEADY[:6], 0.1, steady) is None  # converged, but too early
    assert stop_reason(STEADY[:6], 0.5, steady) == "converged"
    with pytest.raises(ValueError, match="min_time_s must be at most budget_s"):
        spec(min_time_s=2.0)


def test_converged_means_strictly_under_rel_ci() -> None:
    samples = NOISY[:30]
    halfwidth = rel_ci_halfwidth(samples)
    assert stop_reason(samples, 0.1, spec(rel_ci=halfwidth, max_samples=100)) is None
    assert stop_reason(samples, 0.1, spec(rel_ci=halfwidth * 1.01, max_samples=100)) == (
        "converged"
    )


def test_budget_stops_once_spent_reaches_it() -> None:
    noisy = spec(rel_ci=1e-6, max_samples=100)
    assert stop_reason(NOISY[:10], 0.999, noisy) is None
    assert stop_reason(NOISY[:10], 1.0, noisy) == "budget"


def test_max_samples_stops_at_the_cap() -> None:
    noisy = spec(rel_ci=1e-6, max_samples=20)
    assert stop_reason(NOISY[:19], 0.1, noisy) is None
    assert stop_reason(NOISY[:20], 0.1, noisy) == "max_samples"


def test_convergence_wins_over_budget_and_budget_over_max_samples() -> None:
    at_every_limit = spec(min_samples=6, max_samples=12, budget_s=1.0)
    assert stop_reason(STEADY, 5.0, at_every_limit) == "converged"
    assert stop_reason(NOISY[:12], 5.0, spec(rel_ci=1e-6, max_samples=12)) == "budget"


def test_rule_answers_as_the_function_on_a_steady_run() -> None:
    rule = StopRule(spec(min_samples=6))
    answers = [rule.check(STEADY[:n], 0.01 * n) for n in range(1, 13)]
    assert answers[:5] == [None] * 5
    assert answers[5] == "converged"


def test_rule_reaches_budget_and_cap_on_the_same_sample_as_the_function() -> None:
    rule = StopRule(spec(rel_ci=1e-6, max_samples=400, budget_s=1.0))
    stops = [rule.check(NOISY[:n], n / 250) for n in range(1, 251)]
    assert stops[:249] == [None] * 249 and stops[249] == "budget"
    rule = StopRule(spec(rel_ci=1e-6, max_samples=333, budget_s=1e9))
    stops = [rule.check(NOISY[:n], 0.0) for n in range(1, 334)]
    assert stops[:332] == [None] * 332 and stops[332] == "max_samples"


def test_rule_computes_the_interval_rarely(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def counted(values: list[float]) -> float:
        calls.append(len(values))
        return rel_ci_halfwidth(values)

    monkeypatch.setattr(stop, "rel_ci_halfwidth", counted)
    rule = StopRule(spec(min_samples=10, rel_ci=1e-9, max_samples=100_000, budget_s=1e9))
    samples: list[float] = []
    for value in NOISY * 25:  # 10_000 samples
        samples.append(value)
        assert rule.check(samples, 0.0) is None
    # Each check waits for 10% more samples: tens of checks, not thousands.
    assert len(calls) < 100
    steps = [later - earlier for earlier, later in zip(calls, calls[1:], strict=False)]
    assert all(step >= earlier // 10 for step, earlier in zip(steps, calls, strict=False))


@settings(max_examples=150, deadline=None)
@given(
    samples=st.lists(st.floats(1.0, 1.5), min_size=3, max_size=150),
    min_samples=st.integers(3, 30),
    extra_samples=st.integers(0, 150),
    budget_s=st.floats(0.5, 200.0),
    rel_ci=st.floats(1e-4, 0.3),
)
def test_cadence_never_changes_the_decision(
    samples: list[float],
    min_samples: int,
    extra_samples: int,
    budget_s: float,
    rel_ci: float,
) -> None:
    """Fed one sample at a time, the rule answers None or exactly what the function says,
    and stops no later than the function's first budget or max_samples stop."""
    limits = TimerSpec(
        min_samples=min_samples,
        max_samples=min_samples + extra_samples,
        budget_s=budget_s,
        rel_ci=rel_ci,
    )
    rule = StopRule(limits)
    spent = 0.0
    for n in range(1, len(samples) + 1):
        spent += samples[n - 1]
        said = rule.check(samples[:n], spent)
        truth = stop_reason(samples[:n], spent, limits)
        assert said in (None, truth)
        if truth in ("budget", "max_samples"):
            assert said == truth
        if said is not None:
            break


class FakeClock:
    """perf_counter_ns for the CPU timer: a call to the kernel advances it."""

    def __init__(self, durations_ns: list[int]) -> None:
        self.now = 0
        self.durations_ns = durations_ns
        self.calls = 0

    def __call__(self) -> int:
        return self.now

    def run(self) -> None:
        self.now += self.durations_ns[self.calls % len(self.durations_ns)]
        self.calls += 1


def cpu_measure(durations_ns: list[int], limits: TimerSpec) -> Measurement:
    clock = FakeClock(durations_ns)
    return CpuTimer(clock).measure(Kernel(run=clock.run), limits)


def test_cpu_timer_converges_as_soon_as_the_rule_allows() -> None:
    measured = cpu_measure([1000], spec(warmup_s=0.0, min_samples=6))
    assert (measured.stop_reason, len(measured.samples_s)) == ("converged", 6)
    assert measured.samples_s == pytest.approx([1e-6] * 6)


def test_cpu_timer_stops_on_its_budget_of_wall_time_then_on_max_samples() -> None:
    noisy_ns = [round(v * 1e6) for v in NOISY]  # 1-2 ms each
    budget = spec(warmup_s=0.0, rel_ci=1e-6, budget_s=0.02, max_samples=100)
    measured = cpu_measure(noisy_ns, budget)
    assert measured.stop_reason == "budget"
    assert 0.02 <= sum(measured.samples_s) < 0.02 + 2e-3
    measured = cpu_measure(noisy_ns, spec(warmup_s=0.0, rel_ci=1e-6, budget_s=1e9))
    assert (measured.stop_reason, len(measured.samples_s)) == ("max_samples", 20)
