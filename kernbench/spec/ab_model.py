"""The `ab:` block of a bench file (`AbSpec`) and an A/B's numbers, declared here once:
the block's bounds and defaults, `ab`'s and `compare`'s options, their help and
ab/settings.py's checks all read these."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from kernbench.errors import UserError, number_problem
from kernbench.spec.env_value import EnvValue
from kernbench.spec.fields import Count, EnvVarName, Flag, PositiveFloat, Real, Strict

# A verdict needs each side's spread, which one round lacks (results/ab.py).
MIN_ROUNDS = 2
MAX_ROUNDS = 100
# The fewest rounds whose median interval reaches analyze/stats.CONFIDENCE (95 %): their
# min-max. With fewer, a change that does nothing is called faster or slower by chance too
# often for a `--fail-on` gate (ab/gate.py). Typed here, where `--help` reads it without
# scipy; tests/test_ab_numbers.py checks it against the statistics.
GATE_MIN_ROUNDS = 6
# `--fail-on`, the gate of `ab` and `compare`: the verdicts each fails on are ab/gate.py's.
FailOn = Literal["slower", "faster", "any"]
FAIL_ONS: tuple[FailOn, ...] = get_args(FailOn)
DEFAULT_ROUNDS = GATE_MIN_ROUNDS  # so an A/B of the default rounds can gate
AUTO_MAX_ROUNDS = 20  # `--rounds auto`: from DEFAULT_ROUNDS up to this while a cell is unstable
DEFAULT_MIN_EFFECT = 1.0  # percent
MIN_EFFECT_MAX = 1000.0  # percent: a tenfold change is past any threshold worth asking for
# The longest turn an interleaved A/B takes, in ms: the block's `turn_ms` and `--turn-ms`.
MAX_TURN_MS = 10_000
DEFAULT_TURN_MS = 5.0  # measured, docs/ab-schedules.md; ab/interleave.py says why
AbSchedule = Literal["interleaved", "sequential"]
AB_SCHEDULES: tuple[AbSchedule, ...] = get_args(AbSchedule)
DEFAULT_SCHEDULE: AbSchedule = "interleaved"


def min_effect_problem(value: float) -> str | None:
    """Why `value` is no minimum effect, %, None where it is one: `--min-effect`'s check,
    and the A/B settings' of a value given through the API (ab/settings.py)."""
    return number_problem(value, 0.0, MIN_EFFECT_MAX)


def checked_min_effect(value: float) -> float:
    """`value`, else a UserError in `--min-effect`'s words: the check of a minimum effect
    given through the API (`ab`'s settings, `compare_runs`, `summarize_ab`)."""
    if problem := min_effect_problem(value):
        raise UserError(f"--min-effect: {problem}")
    return value


def turn_ms_problem(value: float) -> str | None:
    """Why `value` is no turn length, ms, None where it is one: `--turn-ms`'s check, and
    the A/B settings' of a value given through the API (ab/settings.py)."""
    return number_problem(value, 0.0, MAX_TURN_MS, above=True)


class AbSpec(Strict):
    """Defaults for `kernbench ab --bench NAME` so the command needs no flags."""

    switch: EnvVarName = Field(description="The environment variable A and B set, or "
                               "`variant`: then a and b name two of the bench's variants.")
    a: EnvValue | None = Field("0", description="Side A's value (or variant); null: side A leaves "
                          "the variable unset, which is not the empty string.")
    b: EnvValue | None = Field("1", description="Side B's value (or variant); null: unset.")
    rounds: Count = Field(DEFAULT_ROUNDS, ge=MIN_ROUNDS, le=MAX_ROUNDS)
    max_rounds: Count | None = Field(None, ge=MIN_ROUNDS, le=MAX_ROUNDS, description="Keep "
                                     "adding rounds, past `rounds`, while a cell is unstable, "
                                     "up to this.")
    aa: Flag = False
    min_effect: Real = Field(DEFAULT_MIN_EFFECT, ge=0, le=MIN_EFFECT_MAX,
                             description="Smallest effect (percent) worth a call.")
    schedule: AbSchedule = Field(
        DEFAULT_SCHEDULE,
        description="interleaved: a round's sides live side by side and take turns per cell; "
        "sequential: each side is a whole run after the other.",
    )
    turn_ms: PositiveFloat | None = Field(
        None, le=MAX_TURN_MS,
        description=f"Interleaved: the length a turn aims at, in ms (default {DEFAULT_TURN_MS:g}).",
    )
