"""The A/B plan, written as `ab-run.json` before any side runs.

It holds everything the analysis needs besides the round folders (switch, values,
rounds, A/A, minimum effect, the schedule with each run's position), so
`kernbench summarize DIR` rebuilds `ab.json` from the folder alone.

Format history (bump MANIFEST_VERSION and add a step to MANIFEST_FORMAT's `update_to`):
  1: first format.
  2: `schedule`: sequential (each side a whole run, one after the other) or interleaved
     (a round's sides live together and take turns per cell; A' is AA1). Version 1 was
     sequential. Later a run's `pins_mode` may be "auto" (the first run, and B's first in
     an A/B of the variant; before, the first run was "record"), and `pins_from`.
  3: `a`, `b` and a run's `value` may be null: the side leaves the switch unset.
  4: `bench_path`, `bench_dirs` and `pins_from` may be relative: to the project the A/B's
     folder lies in, found from that folder (results/folder_paths.py). Version 3 kept them
     absolute, which still reads so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from kernbench.ab.pairing import switches_variant
from kernbench.errors import UserError
from kernbench.execute.options import RunOptions
from kernbench.execute.pins import PinMode
from kernbench.results.folder_paths import recorded_path, resolved_path
from kernbench.results.jsonio import FileFormat, unchanged
from kernbench.results.kinds import AB_MANIFEST_NAME
from kernbench.spec.ab_model import AbSchedule
from kernbench.spec.fields import Strict
from kernbench.worker_env import FAST_ENV, ROUND_ENV, SIDE_ENV, SWITCH_ENV

MANIFEST_VERSION = 4
PINS_NAME = "pins.json"  # the A/B folder's pins: the bench's, and what round 1 tunes (ADR 0068)

Side = Literal["A", "B", "AA1", "AA2"]


class SideRun(Strict):
    """One fresh process: one side of one round."""

    name: str  # the run's folder, r<k>_<side>
    round: int
    side: Side
    value: str | None  # what the switch is set to; None: unset
    position: int  # 1-based place in the whole sequence of runs
    slot: Literal[1, 2]  # first or second of its pair
    # Round 1's A replays the bench's committed pins that hold and tunes the rest (auto),
    # into the A/B's pins file, which every later run replays; in an A/B of the variant,
    # B's first run does the same for its own kernel. "record": files before ADR 0068.
    pins_mode: PinMode


class AbManifest(Strict):
    schema_version: int = MANIFEST_VERSION
    schedule: AbSchedule = "sequential"
    schedule_note: str | None = None  # why this schedule, when it is not the one asked for
    # What the check that the switch is read (ab/switch_check.py) said before the A/B ran;
    # None: it found the switch, or the switch is `variant`.
    switch_note: str | None = None
    turn_s: float | None = None  # interleaved: the turn length asked for (None: the default)
    max_rounds: int | None = None  # rounds added while a cell is unstable, up to this many
    bench: str
    bench_path: str
    bench_dirs: list[str] = Field(default_factory=list)
    device: str
    switch: str
    a: str | None  # None: the side leaves the switch unset
    b: str | None
    rounds: int = Field(ge=2)
    aa: bool
    min_effect: float = Field(ge=0)
    variants: list[str]  # from the plan, so a round that crashed still names them
    only: list[str] = Field(default_factory=list)  # the cells chosen (`--only`), as `run`
    pins_from: str | None = None  # the bench's committed pins file the A/B's pins began as
    created_utc: str
    runs: list[SideRun]

    @model_validator(mode="after")
    def _every_round_has_its_pairs(self) -> AbManifest:
        # The analysis pairs each round's sides; a hand-edited file that lost a run would
        # otherwise stop it on an assertion.
        wanted = [("A", "B"), *([aa_sides(self.schedule)] if self.aa else [])]
        for k in range(1, self.rounds + 1):
            for sides in wanted:
                if self.pair(k, sides) is None:
                    raise ValueError(f"round {k} has no {' and '.join(sides)} runs")
        return self

    def pair(self, round: int, sides: tuple[Side, Side]) -> tuple[SideRun, SideRun] | None:
        by_side = {run.side: run for run in self.runs if run.round == round}
        if sides[0] in by_side and sides[1] in by_side:
            return by_side[sides[0]], by_side[sides[1]]
        return None


def aa_sides(schedule: AbSchedule) -> tuple[Side, Side]:
    """The two runs whose delta is the A/A control: an extra pair of A runs in turn, or,
    interleaved, A against its live twin A'."""
    return ("A", "AA1") if schedule == "interleaved" else ("AA1", "AA2")


def pins_mode(runs: Sequence[SideRun], side: Side, own_b_pins: bool) -> PinMode:
    """The pins mode of the next run of `side` after `runs`: the A/B's first run replays
    what the A/B's pins file holds (the bench's committed pins) and tunes the rest; with
    `own_b_pins` (the sides time different kernels), so does B's first. Every other run
    replays."""
    if not runs:
        return "auto"
    if own_b_pins and side == "B" and all(run.side != "B" for run in runs):
        return "auto"
    return "replay"


def interleaved_schedule(
    rounds: int, a: str | None, b: str | None, aa: bool, own_b_pins: bool = False
) -> list[SideRun]:
    """Per round, the sides that live side by side: A, B and (A/A) A' as AA1. Their
    turns are ordered per cell (`ab.interleave.turn_order`), so `position` only numbers
    them. Round 1's A side tunes what the pins lack (`pins_mode`)."""
    runs: list[SideRun] = []
    for k in range(1, rounds + 1):
        sides: list[tuple[Side, str | None]] = [("A", a), ("B", b)]
        if aa:
            sides.append(("AA1", a))
        for side, value in sides:
            runs.append(SideRun(
                name=f"r{k}_{side}", round=k, side=side, value=value,
                position=len(runs) + 1, slot=1 if side == "A" else 2,
                pins_mode=pins_mode(runs, side, own_b_pins),
            ))
    return runs


def schedule(
    rounds: int, a: str | None, b: str | None, aa: bool, own_b_pins: bool = False
) -> list[SideRun]:
    """Odd rounds run A then B, even rounds B then A, so drift in one direction
    lands on both sides equally; each round's A/A pair (if any) follows its A/B pair.
    Round 1's A side is the first run and tunes what the pins lack (`pins_mode`)."""
    runs: list[SideRun] = []

    def add(round: int, side: Side, value: str | None, slot: Literal[1, 2]) -> None:
        runs.append(
            SideRun(
                name=f"r{round}_{side}",
                round=round,
                side=side,
                value=value,
                position=len(runs) + 1,
                slot=slot,
                pins_mode=pins_mode(runs, side, own_b_pins),
            )
        )

    for k in range(1, rounds + 1):
        pair: list[tuple[Side, str | None]] = [("A", a), ("B", b)]
        if k % 2 == 0:
            pair.reverse()
        for slot, (side, value) in zip((1, 2), pair, strict=True):
            add(k, side, value, slot)  # type: ignore[arg-type]
        if aa:
            add(k, "AA1", a, 1)
            add(k, "AA2", a, 2)
    return runs


def side_options(
    manifest: AbManifest, run: SideRun, pins_path: Path, bench_hash: str,
    timers_path: Path | None = None, cells: tuple[int, ...] | None = None,
) -> RunOptions:
    """One side's run: its one round, numbered as in the schedule, on the shared pins
    (and, sequential sides, the shared timers: execute/cell_timers.py); `cells`: the
    plan indices of its cells when they are not all those chosen (`pairing.side_indices`)."""
    return RunOptions(
        bench_path=Path(manifest.bench_path),
        spec_hash=bench_hash,
        device=manifest.device,
        rounds=1,
        first_round=run.round,
        pins=pins_path,
        pins_mode=run.pins_mode,
        timers=timers_path,
        side=side_name(run),
        figures=False,
        only=tuple(manifest.only),
        cells=cells,
    )


def side_name(run: SideRun) -> str:
    # A/A sides are A sides: a kernel that branches on KERNBENCH_SIDE sees "A".
    return "B" if run.side == "B" else "A"


def side_env(manifest: AbManifest, run: SideRun) -> dict[str, str | None]:
    """What a side changes in the environment it inherits; None: a variable removed."""
    # KERNBENCH_SWITCH names the switch, so each side's provenance records its value (an
    # A/B of the variant: the cells' own variant says it).
    switch = {} if switches_variant(manifest.switch) else {manifest.switch: run.value}
    return {
        FAST_ENV: None,
        **switch,
        SWITCH_ENV: manifest.switch,
        SIDE_ENV: side_name(run),
        ROUND_ENV: str(run.round),
    }


def with_changes(base: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """`base` with `changes` (`side_env`) applied: a None removes the variable, so a side
    that leaves the switch unset does not inherit it from the shell that started the A/B."""
    merged = {**base, **changes}
    return {name: value for name, value in merged.items() if value is not None}


def add_round(manifest: AbManifest) -> AbManifest:
    """The plan with one more round; the runs planned so far are unchanged (both
    schedules build round k the same whatever the number of rounds)."""
    make = interleaved_schedule if manifest.schedule == "interleaved" else schedule
    rounds = manifest.rounds + 1
    return manifest.model_copy(update={
        "rounds": rounds, "runs": make(rounds, manifest.a, manifest.b, manifest.aa,
                                       switches_variant(manifest.switch)),
    })


def _sequential(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "schedule": "sequential"}


MANIFEST_FORMAT = FileFormat(
    "plan of an A/B", MANIFEST_VERSION, AbManifest,
    update_to={2: _sequential, 3: unchanged, 4: unchanged},
)


def save_manifest(folder: Path, manifest: AbManifest) -> None:
    """`manifest` (its paths absolute, as `load_manifest` gives them) as ab-run.json, its
    paths as `folder_paths.recorded_path` keeps them."""
    MANIFEST_FORMAT.write(Path(folder) / AB_MANIFEST_NAME,
                          _with_paths(manifest, recorded_path, folder))


def start_order(runs: Sequence[SideRun]) -> list[SideRun]:
    """The order in which an interleaved round's sides start, and prepare each cell:
    rotated from round to round, so no side always starts first or last (a process's start
    slot can move a kernel of tens of microseconds by 2%, `ab.slots`), except that round
    1's A comes first: it records the pins that the others replay."""
    by_position = sorted(runs, key=lambda r: r.position)
    shift = (by_position[0].round - 1) % len(by_position)
    return by_position[shift:] + by_position[:shift]


def load_manifest(folder: Path) -> AbManifest:
    path = Path(folder) / AB_MANIFEST_NAME
    if not path.is_file():
        raise UserError(f"{folder}: not an A/B folder (no {AB_MANIFEST_NAME})")
    return _with_paths(MANIFEST_FORMAT.read(path), resolved_path, folder)


def _with_paths(
    manifest: AbManifest, convert: Callable[[str, Path], str], folder: Path
) -> AbManifest:
    return manifest.model_copy(update={
        "bench_path": convert(manifest.bench_path, folder),
        "bench_dirs": [convert(d, folder) for d in manifest.bench_dirs],
        "pins_from": convert(manifest.pins_from, folder) if manifest.pins_from else None,
    })
