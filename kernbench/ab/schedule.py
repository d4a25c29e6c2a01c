"""The A/B plan, written as `ab-run.json` before any side runs.

It holds everything the analysis needs besides the round folders (switch, values,
rounds, A/A, minimum effect, the schedule with each run's position), so
`kernbench summarize DIR` rebuilds `ab.json` from the folder alone.

Format history (bump MANIFEST_VERSION and add a step to MANIFEST_FORMAT's `update_to`):
  1: first format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernbench.errors import UserError
from kernbench.results.jsonio import FileFormat

MANIFEST_NAME = "ab-run.json"
MANIFEST_VERSION = 1

Side = Literal["A", "B", "AA1", "AA2"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SideRun(_Strict):
    """One fresh process: one side of one round."""

    name: str  # the run's folder, r<k>_<side>
    round: int
    side: Side
    value: str  # what the switch is set to
    position: int  # 1-based place in the whole sequence of runs
    slot: Literal[1, 2]  # first or second of its pair
    pins_mode: Literal["record", "replay"]


class AbManifest(_Strict):
    schema_version: int = MANIFEST_VERSION
    bench: str
    bench_path: str
    bench_dirs: list[str] = Field(default_factory=list)
    device: str
    switch: str
    a: str
    b: str
    rounds: int = Field(ge=2)
    aa: bool
    min_effect: float = Field(ge=0)
    variants: list[str]  # from the plan, so a round that crashed still names them
    created_utc: str
    runs: list[SideRun]

    def pair(self, round: int, sides: tuple[Side, Side]) -> tuple[SideRun, SideRun] | None:
        by_side = {run.side: run for run in self.runs if run.round == round}
        if sides[0] in by_side and sides[1] in by_side:
            return by_side[sides[0]], by_side[sides[1]]
        return None


def schedule(rounds: int, a: str, b: str, aa: bool) -> list[SideRun]:
    """Odd rounds run A then B, even rounds B then A, so drift in one direction
    lands on both sides equally; each round's A/A pair (if any) follows its A/B pair.
    Round 1's A side is the first run and the only one that records pins."""
    runs: list[SideRun] = []

    def add(round: int, side: Side, value: str, slot: Literal[1, 2]) -> None:
        first = not runs
        runs.append(
            SideRun(
                name=f"r{round}_{side}",
                round=round,
                side=side,
                value=value,
                position=len(runs) + 1,
                slot=slot,
                pins_mode="record" if first else "replay",
            )
        )

    for k in range(1, rounds + 1):
        pair: list[tuple[Side, str]] = [("A", a), ("B", b)]
        if k % 2 == 0:
            pair.reverse()
        for slot, (side, value) in zip((1, 2), pair, strict=True):
            add(k, side, value, slot)  # type: ignore[arg-type]
        if aa:
            add(k, "AA1", a, 1)
            add(k, "AA2", a, 2)
    return runs


MANIFEST_FORMAT = FileFormat("A/B manifest", MANIFEST_VERSION, AbManifest)


def save_manifest(folder: Path, manifest: AbManifest) -> None:
    MANIFEST_FORMAT.write(Path(folder) / MANIFEST_NAME, manifest)


def load_manifest(folder: Path) -> AbManifest:
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise UserError(f"{folder}: not an A/B folder (no {MANIFEST_NAME})")
    return MANIFEST_FORMAT.read(path)
