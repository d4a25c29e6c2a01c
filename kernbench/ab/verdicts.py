"""The verdict rule of an A/B cell and the numbers it rests on (docs/adr/0020-ab-method.md
and its addendum on the A/A comparison).

Deltas are percentages of time, 100*(B/A - 1): positive means B is slower.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

# The rule's A/A constants sit beside the text that says what a verdict means (results/ab.py).
from kernbench.results.ab import AA_ALPHA, AA_MIN_ROUNDS, Verdict
from kernbench.spec.ab_model import MIN_ROUNDS


def to_pct(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio)


def geomean_ratio(deltas_pct: Sequence[float]) -> float:
    """The geometric mean of the B/A (or NEW/BASE) ratios the deltas (percent) stand for."""
    return math.exp(float(np.mean([math.log1p(d / 100) for d in deltas_pct])))


def verdict(
    low_pct: float,
    high_pct: float,
    threshold_pct: float,
    delta_pct: float = 0.0,
    aa_p: float | None = None,
    rounds: int = MIN_ROUNDS,
    min_effect_pct: float | None = None,
) -> Verdict:
    """faster/slower when the whole interval is beyond the threshold; same when it lies
    within it, or when the median delta does and the per-round deltas are
    indistinguishable from the A/A control's (`aa_p`, see `aa_p_value`); unstable
    otherwise, and always with fewer than MIN_ROUNDS `rounds` (the fewest of a side).

    Never same where the whole interval is beyond the minimum effect (`min_effect_pct`,
    under a threshold the A/A floor raised): the rounds show an effect worth a call, only
    smaller than the floor, so the A/B cannot tell it from noise, not that there is none."""
    if rounds < MIN_ROUNDS:
        return "unstable"
    if high_pct < -threshold_pct:
        return "faster"
    if low_pct > threshold_pct:
        return "slower"
    least = threshold_pct if min_effect_pct is None else min_effect_pct
    if low_pct > least or high_pct < -least:
        return "unstable"
    if -threshold_pct <= low_pct and high_pct <= threshold_pct:
        return "same"
    if aa_p is not None and aa_p >= AA_ALPHA and abs(delta_pct) <= threshold_pct:
        return "same"
    return "unstable"


def aa_floor(aa_deltas_pct: Sequence[float]) -> float:
    """The A/A noise floor: the largest |delta| two identical sides showed."""
    return max(abs(d) for d in aa_deltas_pct)


def aa_p_value(deltas_pct: Sequence[float], aa_deltas_pct: Sequence[float]) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value of the rounds' B/A delta minus their A/A
    delta (in the interleaved schedule, B against A' of the same round); None where the
    test cannot decide: fewer than AA_MIN_ROUNDS rounds, or a delta that is not finite.

    The interval alone cannot call a switch that does nothing `same` more than about half
    the time when the threshold is the A/A floor: with as many B/A rounds as A/A rounds,
    the largest |B/A delta| exceeds the largest |A/A delta| in half the A/Bs. Asking
    instead whether B sits where the A/A control does, round by round, keeps a consistent
    shift from passing as `same` (at 6 rounds: B on one side in every round) while noise
    passes. Paired by round, so the A side that B/A and A'/A share cancels."""
    if len(deltas_pct) != len(aa_deltas_pct):
        return None
    differences = [d - a for d, a in zip(deltas_pct, aa_deltas_pct, strict=True)]
    if len(differences) < AA_MIN_ROUNDS or not all(map(math.isfinite, differences)):
        return None
    if not any(differences):
        return 1.0  # identical deltas everywhere: indistinguishable
    from scipy.stats import wilcoxon  # lazy: scipy.stats is slow to import

    with warnings.catch_warnings():  # ties or zeros: scipy says it leaves the exact test
        warnings.simplefilter("ignore")
        return float(wilcoxon(differences).pvalue)


def sign_flips(deltas: Sequence[float], median: float) -> int:
    return sum(1 for d in deltas if d * median < 0)


def order_effect(deltas_pct: Sequence[float], a_first: Sequence[bool]) -> float:
    first = [d for d, flag in zip(deltas_pct, a_first, strict=True) if flag]
    second = [d for d, flag in zip(deltas_pct, a_first, strict=True) if not flag]
    if not first or not second:
        return float("nan")
    return float(np.mean(first) - np.mean(second))


def rel_iqr_pct(samples: Sequence[float]) -> float:
    q1, median, q3 = np.percentile(np.asarray(samples, dtype=float), [25, 50, 75])
    return float(100.0 * (q3 - q1) / median) if median > 0 else float("nan")
