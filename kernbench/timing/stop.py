"""The stop rule of every timer: when the samples taken so far are enough.

`stop_reason` is the rule itself; `StopRule` applies it while samples come in, computing
the median's confidence interval only when the samples have grown by a fraction since it
last did (the interval sorts every sample: per sample, that would dominate a 1 µs
kernel's loop). Both give the same reason whenever they give one; the cadence can only
let convergence be seen a few samples late.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from kernbench.analyze.stats import rel_ci_halfwidth
from kernbench.spec.timer_model import TimerSpec

StopReason = Literal["converged", "budget", "max_samples"]

# The interval is recomputed once the samples have grown by this fraction (at least one).
CHECK_GROWTH = 0.1


def stop_reason(samples: Sequence[float], spent_s: float, spec: TimerSpec) -> StopReason | None:
    """Why sampling stops now, or None to go on.

    Nothing stops before `min_samples`. Then, in order: the median's 95% CI half-width,
    relative to the median, is under `rel_ci` and `min_time_s` is spent ("converged");
    `spent_s` has reached `budget_s` ("budget"); `max_samples` are taken ("max_samples").
    """
    n = len(samples)
    if n < spec.min_samples:  # max_samples >= min_samples, so no cap is missed here
        return None
    if spent_s >= spec.min_time_s and rel_ci_halfwidth(samples) < spec.rel_ci:
        return "converged"
    if spent_s >= spec.budget_s:
        return "budget"
    if n >= spec.max_samples:
        return "max_samples"
    return None


class StopRule:
    """`stop_reason` for a growing list of samples, with the interval computed rarely.

    The rule is applied in full whenever the budget or the sample cap is reached, so a
    cell that converged is never reported as stopped by its budget; between those, only
    once the samples have grown by `growth` since the last full check.
    """

    def __init__(self, spec: TimerSpec, growth: float = CHECK_GROWTH) -> None:
        self.spec = spec
        self.growth = growth
        self._next_check = spec.min_samples

    def check(self, samples: Sequence[float], spent_s: float) -> StopReason | None:
        n = len(samples)
        at_a_limit = spent_s >= self.spec.budget_s or n >= self.spec.max_samples
        if n < self._next_check and not at_a_limit:
            return None
        self._next_check = n + max(1, int(n * self.growth))
        return stop_reason(samples, spent_s, self.spec)
