"""The settings of a new A/B: the command line's over the bench's `ab:` block over the
defaults, each checked before anything runs."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from kernbench.ab.pairing import check_variants, switches_variant
from kernbench.errors import UserError, is_whole_number
from kernbench.results.ab import side_setting
from kernbench.spec.ab_model import (
    AB_SCHEDULES,
    AUTO_MAX_ROUNDS,
    DEFAULT_ROUNDS,
    MAX_ROUNDS,
    MIN_ROUNDS,
    AbSpec,
    checked_min_effect,
    turn_ms_problem,
)
from kernbench.spec.models import Bench
from kernbench.worker_env import RUNNER_SET

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class AbChoices:
    """The A/B settings `ab` may be told, each an option of the same name; None: the
    bench's `ab:` block, then the default. `ab --resume` refuses every one of them: the
    A/B goes on with those its ab-run.json holds."""

    switch: str | None = None
    a: str | None = None
    b: str | None = None
    a_unset: bool | None = None
    b_unset: bool | None = None
    rounds: int | str | None = None
    aa: bool | None = None
    min_effect: float | None = None
    schedule: str | None = None
    turn_ms: float | None = None


AB_CHOICES = tuple(f.name for f in fields(AbChoices))


def resolve_settings(bench: Bench, choices: AbChoices) -> AbSpec:
    """The command line's `choices` over the bench's `ab:` block over the defaults. A
    side's value None (`--a-unset`, or `a: null` in the block) leaves the switch unset on
    that side."""
    block = bench.ab
    switch = choices.switch or (block.switch if block else None)
    if not switch:
        raise UserError(
            f"--switch: bench {bench.name!r} has no ab: block naming a switch; give --switch VAR"
        )
    if not _ENV_NAME.match(switch):
        raise UserError(f"--switch: {switch!r} is not an environment variable name")
    if switch in RUNNER_SET:
        raise UserError(f"--switch: {switch} is set by kernbench in every side's process; "
                        "switch a variable the code under test reads")
    defaults = block or AbSpec(switch=switch)
    values = {side: _side_value(side, given, unset, getattr(defaults, side))
              for side, given, unset in (("a", choices.a, choices.a_unset),
                                         ("b", choices.b, choices.b_unset))}
    if switches_variant(switch) and None in values.values():
        raise UserError(f"--{'/'.join(k for k, v in values.items() if v is None)}: an A/B of "
                        "the variant names a variant on each side; none can be unset")
    if switches_variant(switch) and not (block and switches_variant(block.switch)):
        # The defaults (0 and 1, or the block's values of another switch) name no variant.
        missing = [f"--{side}" for side, given in (("a", choices.a), ("b", choices.b))
                   if given is None]
        if missing:
            raise UserError(f"{'/'.join(missing)}: an A/B of the variant names two of bench "
                            f"{bench.name!r}'s variants: {', '.join(bench.variants)}")
    chosen: dict[str, Any] = {
        "switch": switch,
        "a": values["a"],
        "b": values["b"],
        "rounds": defaults.rounds,
        "max_rounds": defaults.max_rounds,
        "aa": defaults.aa if choices.aa is None else choices.aa,
        "min_effect": defaults.min_effect if choices.min_effect is None else choices.min_effect,
        "schedule": defaults.schedule if choices.schedule is None else choices.schedule,
        "turn_ms": defaults.turn_ms if choices.turn_ms is None else choices.turn_ms,
    }
    if chosen["turn_ms"] is not None and (problem := turn_ms_problem(chosen["turn_ms"])):
        raise UserError(f"--turn-ms: {problem}")
    if chosen["schedule"] not in AB_SCHEDULES:
        raise UserError(
            f"--schedule: {chosen['schedule']!r} is not one of {', '.join(AB_SCHEDULES)}"
        )
    if choices.turn_ms is not None and chosen["schedule"] == "sequential":
        # A turn is the interleaved schedule's; a sequential side runs whole, so the length
        # asked for would be recorded and never used.
        raise UserError("--turn-ms: the sequential schedule takes no turns (each side is a "
                        "whole run); give --schedule interleaved, or drop --turn-ms")
    if choices.turn_ms is None and chosen["schedule"] == "sequential":
        chosen["turn_ms"] = None  # the block's turn length, for its interleaved schedule only
    if chosen["a"] == chosen["b"]:
        raise UserError(f"--a/--b: both sides would leave {side_setting(switch, chosen['a'])}"
                        if chosen["a"] is None else
                        f"--a/--b: both sides would set {side_setting(switch, chosen['a'])}")
    check_variants(switch, chosen["a"], chosen["b"], bench)
    if choices.rounds is not None:
        chosen["rounds"], chosen["max_rounds"] = parse_rounds(choices.rounds)
    if not MIN_ROUNDS <= chosen["rounds"] <= MAX_ROUNDS:
        raise UserError(f"--rounds: {chosen['rounds']}: give {MIN_ROUNDS} to {MAX_ROUNDS} "
                        f"({DEFAULT_ROUNDS} is the default)")
    checked_min_effect(chosen["min_effect"])
    if chosen["max_rounds"] is not None and not (
            chosen["rounds"] <= chosen["max_rounds"] <= MAX_ROUNDS):
        raise UserError(f"--rounds: auto:{chosen['max_rounds']}: give {chosen['rounds']} "
                        f"to {MAX_ROUNDS}")
    return AbSpec(**chosen)


def _side_value(side: str, given: str | None, unset: bool | None, default: str | None
                ) -> str | None:
    """A side's value: `--a VALUE`, `--a-unset` (None), or the block's or default one."""
    if unset and given is not None:
        raise UserError(f"--{side}/--{side}-unset: give one: a value, or the variable unset")
    if unset:
        return None
    return default if given is None else given


def parse_rounds(value: int | str) -> tuple[int, int | None]:
    """`--rounds`: N, `auto` (DEFAULT_ROUNDS, then more while a cell is unstable, up to
    AUTO_MAX_ROUNDS) or `auto:MAX`. Returns (rounds, max_rounds)."""
    text = str(value).strip()
    if is_whole_number(text):
        return int(text), None
    head, colon, tail = text.partition(":")
    if head == "auto" and (is_whole_number(tail) if colon else True):
        return DEFAULT_ROUNDS, int(tail) if colon else AUTO_MAX_ROUNDS
    raise UserError(f"--rounds: {value!r}: give a number, auto or auto:MAX")
