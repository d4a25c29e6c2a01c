"""The number options several commands share, each checked once.

A typer `min=`/`max=` range check runs before any callback and lets nan through to say
"should be greater than or equal to 0", so ranges are checked here, after finiteness:
nan and inf are refused as what they are, then a finite value out of range.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import typer

from kernbench.spec.models import MIN_EFFECT_MAX


def finite(low: float | None = None, high: float | None = None
           ) -> Callable[[float | None], float | None]:
    """The callback of a float option: a finite number, within [low, high] where given."""

    def check(value: float | None) -> float | None:
        if value is None:
            return value
        if not math.isfinite(value):
            raise typer.BadParameter(f"{value} is not a finite number")
        if (low is not None and value < low) or (high is not None and value > high):
            raise typer.BadParameter(f"{value:g} is not within {_range(low, high)}")
        return value

    return check


def _range(low: float | None, high: float | None) -> str:
    if high is None:
        return f"{low:g} and above"
    return f"{low:g} to {high:g}" if low is not None else f"{high:g} and below"


# --min-effect of compare, ab and summarize: a percentage.
check_min_effect = finite(0.0, MIN_EFFECT_MAX)
