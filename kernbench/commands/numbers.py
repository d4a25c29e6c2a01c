"""The number options several commands share, each checked once.

A typer `min=`/`max=` range check runs before any callback and lets nan through to say
"should be greater than or equal to 0", so ranges are checked here, after finiteness:
nan and inf are refused as what they are, then a finite value out of range, in the words
of `errors.number_problem`.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from kernbench.spec.ab_model import min_effect_problem, turn_ms_problem

Check = Callable[[float | None], float | None]


def refusing(problem_of: Callable[[float], str | None]) -> Check:
    """The callback of a float option that refuses a value `problem_of` finds a problem in."""

    def check(value: float | None) -> float | None:
        if value is not None and (problem := problem_of(value)):
            raise typer.BadParameter(problem)
        return value

    return check


# --min-effect of compare, ab and summarize: a percentage, checked as ab's settings check it.
check_min_effect = refusing(min_effect_problem)
# --turn-ms of ab: a length in ms, checked as ab's settings check it.
check_turn_ms = refusing(turn_ms_problem)
