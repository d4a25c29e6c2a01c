"""The settings of a new A/B: the command line's over the bench's `ab:` block over the
defaults, each checked before anything runs."""

from __future__ import annotations

import re
from typing import Any

from kernbench.ab.pairing import check_variants, switches_variant
from kernbench.errors import UserError, is_whole_number
from kernbench.results.ab import side_setting
from kernbench.spec.models import MAX_TURN_MS, AbSpec, Bench
from kernbench.worker_env import RUNNER_SET

SCHEDULES = ("interleaved", "sequential")
AUTO_ROUNDS = 6  # `--rounds auto` starts with these, as a fixed A/B would
AUTO_MAX_ROUNDS = 20
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def resolve_settings(
    bench: Bench,
    switch: str | None = None,
    a: str | None = None,
    b: str | None = None,
    rounds: int | str | None = None,
    aa: bool | None = None,
    min_effect: float | None = None,
    schedule: str | None = None,
    turn_ms: float | None = None,
    a_unset: bool | None = None,
    b_unset: bool | None = None,
) -> AbSpec:
    """Command-line values over the bench's `ab:` block over the defaults. A side's value
    None (`--a-unset`, or `a: null` in the block) leaves the switch unset on that side."""
    block = bench.ab
    switch = switch or (block.switch if block else None)
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
              for side, given, unset in (("a", a, a_unset), ("b", b, b_unset))}
    if switches_variant(switch) and None in values.values():
        raise UserError(f"--{'/'.join(k for k, v in values.items() if v is None)}: an A/B of "
                        "the variant names a variant on each side; none can be unset")
    if switches_variant(switch) and not (block and switches_variant(block.switch)):
        # The defaults (0 and 1, or the block's values of another switch) name no variant.
        missing = [f"--{side}" for side, given in (("a", a), ("b", b)) if given is None]
        if missing:
            raise UserError(f"{'/'.join(missing)}: an A/B of the variant names two of bench "
                            f"{bench.name!r}'s variants: {', '.join(bench.variants)}")
    chosen: dict[str, Any] = {
        "switch": switch,
        "a": values["a"],
        "b": values["b"],
        "rounds": defaults.rounds,
        "max_rounds": defaults.max_rounds,
        "aa": defaults.aa if aa is None else aa,
        "min_effect": defaults.min_effect if min_effect is None else min_effect,
        "schedule": defaults.schedule if schedule is None else schedule,
        "turn_ms": defaults.turn_ms if turn_ms is None else turn_ms,
    }
    if chosen["turn_ms"] is not None and not 0 < chosen["turn_ms"] <= MAX_TURN_MS:
        raise UserError(f"--turn-ms: {chosen['turn_ms']}: give a length in (0, {MAX_TURN_MS}] ms")
    if chosen["schedule"] not in SCHEDULES:
        raise UserError(f"--schedule: {chosen['schedule']!r} is not one of {', '.join(SCHEDULES)}")
    if turn_ms is not None and chosen["schedule"] == "sequential":
        # A turn is the interleaved schedule's; a sequential side runs whole, so the length
        # asked for would be recorded and never used.
        raise UserError("--turn-ms: the sequential schedule takes no turns (each side is a "
                        "whole run); give --schedule interleaved, or drop --turn-ms")
    if turn_ms is None and chosen["schedule"] == "sequential":
        chosen["turn_ms"] = None  # the block's turn length, for its interleaved schedule only
    if chosen["a"] == chosen["b"]:
        raise UserError(f"--a/--b: both sides would leave {side_setting(switch, chosen['a'])}"
                        if chosen["a"] is None else
                        f"--a/--b: both sides would set {side_setting(switch, chosen['a'])}")
    check_variants(switch, chosen["a"], chosen["b"], bench)
    if rounds is not None:
        chosen["rounds"], chosen["max_rounds"] = parse_rounds(rounds)
    if not 2 <= chosen["rounds"] <= 100:
        raise UserError(f"--rounds: {chosen['rounds']}: give 2 to 100 (6 is the default)")
    if chosen["min_effect"] < 0:
        raise UserError(f"--min-effect: {chosen['min_effect']}: must not be negative")
    if chosen["max_rounds"] is not None and not chosen["rounds"] <= chosen["max_rounds"] <= 100:
        raise UserError(f"--rounds: auto:{chosen['max_rounds']}: give {chosen['rounds']} to 100")
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
    """`--rounds`: N, `auto` (6, then more while a cell is unstable, up to 20) or
    `auto:MAX`. Returns (rounds, max_rounds)."""
    text = str(value).strip()
    if is_whole_number(text):
        return int(text), None
    head, colon, tail = text.partition(":")
    if head == "auto" and (is_whole_number(tail) if colon else True):
        return AUTO_ROUNDS, int(tail) if colon else AUTO_MAX_ROUNDS
    raise UserError(f"--rounds: {value!r}: give a number, auto or auto:MAX")
