"""`--fail-on`, the CI gate of `ab` and `compare`: which verdicts fail it, and the rounds
a gate needs, one rule for both commands."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from kernbench.analyze.stats import CONFIDENCE, median_interval
from kernbench.errors import UserError
from kernbench.results.ab import Verdict
from kernbench.spec.ab_model import FAIL_ONS, GATE_MIN_ROUNDS, FailOn

# The verdicts each gate fails on.
FAILS: dict[FailOn, frozenset[Verdict]] = {
    "slower": frozenset({"slower"}),
    "faster": frozenset({"faster"}),
    "any": frozenset({"slower", "faster"}),
}
# `compare`: a cell measured in BASE that failed in NEW is a regression, the worst slower.
STOPPED_FAILS: frozenset[FailOn] = frozenset({"slower", "any"})


class Called(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def verdict(self) -> Verdict: ...


CalledCell = TypeVar("CalledCell", bound=Called)


def fail_on_choice(fail_on: str | None) -> FailOn | None:
    """`--fail-on` checked: one of FAIL_ONS, or None (no gate). `ab` and `compare` call it
    before anything else, so a bad value is refused with these words, first."""
    if fail_on is None:
        return None
    for choice in FAIL_ONS:
        if choice == fail_on:
            return choice
    raise UserError(f"--fail-on: {fail_on!r} is not one of {', '.join(FAIL_ONS)}")


def failing(cells: Iterable[CalledCell], fail_on: FailOn | None) -> list[CalledCell]:
    """The cells that `--fail-on` makes a CI failure; for `compare` and `ab` alike."""
    if fail_on is None:
        return []
    return [c for c in cells if c.verdict in FAILS[fail_on]]


def weak_caveat(coverages: Iterable[float]) -> str:
    """What a failing gate adds about its calls' intervals (their `coverages`), "" where
    every one reaches CONFIDENCE: a call under it may be chance (a round failed, or
    compare's runs had few rounds)."""
    weak = sum(c < CONFIDENCE for c in coverages)
    return f" ({weak} of them on intervals under {CONFIDENCE:.0%} coverage)" if weak else ""


def gate_rounds_problem(fail_on: FailOn | None, rounds: int) -> str | None:
    """Why `--fail-on` cannot gate `rounds` rounds (a side's fewest, the fewer of compare's
    two), None where it can: under GATE_MIN_ROUNDS, a switch or change that does nothing is
    called faster or slower by chance in up to 1 - coverage of the cells (half of them at 2
    rounds), so the gate's failures and passes would say little (ADR 0020, rounds and a
    gate)."""
    if fail_on is None or rounds >= GATE_MIN_ROUNDS:
        return None
    coverage = median_interval([0.0] * rounds, CONFIDENCE).coverage
    return (f"--fail-on {fail_on}: a gate needs intervals of {CONFIDENCE:.0%} coverage, "
            f"which take {GATE_MIN_ROUNDS} rounds; {rounds} {'gives' if rounds == 1 else 'give'} "
            f"{coverage:.1%}, so a change that does nothing could fail it by chance")
