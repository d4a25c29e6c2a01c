"""Distribution-free statistics shared by the timers, the results and the A/B verdicts.

The confidence interval of a median comes from order statistics: for sorted values
x(1..n), the pair [x(j), x(n+1-j)] covers the population median with probability
1 - 2*P(Bin(n, 1/2) <= j-1). No normality is assumed, which matters for timing samples
(right-skewed, with outliers) and for a handful of per-round deltas.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

CONFIDENCE = 0.95  # the coverage a median interval aims at, unless its caller asks another
CI_NAME = f"{CONFIDENCE:.0%} CI"  # how figures and exports name that interval
# A median whose interval is not within this factor of it either way is not resolved: its
# samples cannot tell the time within a factor of two. A sample that is a difference, the
# graph timer's replay less its flush-only replay (ADR 0030), spreads both ways when the
# difference's own noise outweighs the kernel, and reaches zero and below; a host that
# stalls some calls (an op that synchronizes inside) spreads them upward.
RESOLUTION_FACTOR = 2.0
# What `unresolved` means, as every output says it.
UNRESOLVED_RULE = f"the median's {CI_NAME} is not within a factor of {RESOLUTION_FACTOR:g} of it"


class UnresolvedAdvice(NamedTuple):
    cause: str  # why such a cell's samples scatter, a sentence
    remedy: str  # what may resolve them, a clause ("... may resolve them")


def unresolved_advice(device: str) -> UnresolvedAdvice:
    """Why a cell is unresolved and what may resolve it, as the terminal and both reports
    say it: on a GPU, the timer settings of ADR 0030; a CPU timer subtracts nothing and
    flushes nothing, so there only more samples or a quieter machine help."""
    if device == "cuda":
        return UnresolvedAdvice(
            "A graph-timed cold-L2 sample is a replay less a flush-only replay, and a kernel "
            "of a few µs can be smaller than that difference's noise.",
            "a longer timer.budget_s and more timer.min_samples, timer.l2: warm (nothing "
            "subtracted) or timer.kind: event (an eager call, its launch gap included) may "
            "resolve them (docs/adr/0030-cuda-timing.md)")
    return UnresolvedAdvice(
        "A CPU sample is a loop of calls timed by the host clock: it scatters with what else "
        "the machine runs (other processes, a library's threads oversubscribing the cores).",
        "a longer timer.budget_s and more timer.min_samples, or a quieter machine may "
        "resolve them")


@dataclass(frozen=True)
class MedianInterval:
    low: float
    high: float
    coverage: float  # the exact coverage of [low, high] for the median
    rank: int  # j: low is the j-th smallest value, high the j-th largest
    reached: bool  # False when no pair reaches the requested confidence


def median_interval(
    values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE
) -> MedianInterval:
    """The narrowest order-statistic pair covering the median with >= `confidence`.

    With too few values for any pair to reach it, the min-max is returned with its own
    (lower) coverage and `reached=False`, so callers can say so.
    """
    data = np.sort(np.asarray(values, dtype=float))
    n = len(data)
    if n == 0:
        raise ValueError("median_interval of no values")
    if n == 1:
        return MedianInterval(float(data[0]), float(data[0]), 0.0, 1, False)
    # Largest m with P(Bin(n, 1/2) <= m) <= (1 - confidence)/2; then j = m + 1.
    # Start from the normal approximation and walk to the exact answer.
    tail = (1.0 - confidence) / 2
    # Lazy: `kernbench list`, `validate` and `--help` import this module and use no scipy.
    from scipy.special import ndtri

    m = max(int(n / 2 + ndtri(tail) * math.sqrt(n) / 2), -1)
    while m + 1 < n and _binom_cdf(m + 1, n) <= tail:
        m += 1
    while m >= 0 and _binom_cdf(m, n) > tail:
        m -= 1
    best = min(max(m + 1, 1), n // 2)
    coverage = pair_coverage(n, best)
    return MedianInterval(
        float(data[best - 1]), float(data[n - best]), coverage, best, coverage >= confidence
    )


def pair_coverage(n: int, j: int) -> float:
    """Coverage of [x(j), x(n+1-j)] for the median of n values."""
    return 1.0 - 2.0 * _binom_cdf(j - 1, n)


def _binom_cdf(k: int, n: int) -> float:
    """P(Bin(n, 1/2) <= k)."""
    # Lazy, as `ndtri` above. scipy.special, not scipy.stats: the same binomial CDF for a
    # third of the import time, which every worker process pays.
    from scipy.special import bdtr

    return float(bdtr(k, n, 0.5)) if k >= 0 else 0.0


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    min: float
    max: float
    q1: float
    q3: float
    ci_low: float
    ci_high: float
    ci_coverage: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        return self.iqr / self.median if self.median else float("nan")

    @property
    def rel_ci_halfwidth(self) -> float:
        return (self.ci_high - self.ci_low) / 2 / self.median if self.median else float("inf")


def summarize(values: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    data = np.asarray(values, dtype=float)
    interval = median_interval(data, confidence)
    q1, median, q3 = np.percentile(data, [25, 50, 75])
    return Summary(
        n=len(data),
        median=float(median),
        mean=float(data.mean()),
        min=float(data.min()),
        max=float(data.max()),
        q1=float(q1),
        q3=float(q3),
        ci_low=interval.low,
        ci_high=interval.high,
        ci_coverage=interval.coverage,
    )


def unresolved(median: float, ci_low: float, ci_high: float) -> bool:
    """Whether a median is not resolved by its samples: not above zero, or its interval
    [ci_low, ci_high] not within RESOLUTION_FACTOR of it either way (zero included)."""
    return not (median > 0 and median / RESOLUTION_FACTOR < ci_low
                and ci_high < median * RESOLUTION_FACTOR)


def rel_ci_halfwidth(values: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """Half-width of the median's CI relative to the median: the timers' stop rule."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2:
        return float("inf")
    interval = median_interval(data, confidence)
    median = float(np.median(data))
    if not interval.reached or median <= 0:
        return float("inf")
    return (interval.high - interval.low) / 2 / median
