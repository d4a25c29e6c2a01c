"""What each side of an A/B times in each of its cells.

An A/B of an environment variable times the same cells on both sides. An A/B of the
variant (`--switch variant --a torch --b triton`, docs/adr/0067-ab-of-two-variants.md)
times variant A's cell on side A and variant B's cell of the same axes on side B: the
pair is one cell of the A/B, named `<a>-vs-<b>/<axes>`. Each side's own results keep
their variant and ids; the A/B's turns, timers and report use the pair's id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernbench.errors import UserError
from kernbench.plan import Cell
from kernbench.results.model import CellResult
from kernbench.spec.checks import VARIANT_SWITCH, unknown_ab_variant
from kernbench.spec.models import Bench


def switches_variant(switch: str) -> bool:
    return switch == VARIANT_SWITCH


def pair_label(a: str, b: str) -> str:
    """The variant the pairs of an A/B of variants `a` and `b` are reported under."""
    return f"{a}-vs-{b}"


@dataclass(frozen=True)
class CellPair:
    """One cell of the A/B: what side A (and its A/A twin) times, and what side B times."""

    id: str
    a: Cell
    b: Cell

    def cell(self, side: str) -> Cell:
        return self.b if side == "B" else self.a

    @property
    def variant(self) -> str:
        return self.a.variant if self.a is self.b else pair_label(self.a.variant, self.b.variant)


def pair_cells(
    cells: Sequence[Cell], switch: str, a: str | None, b: str | None
) -> tuple[list[CellPair], list[Cell]]:
    """The cells of the A/B in plan order, and (an A/B of the variant) the cells of A or B
    that have no twin of the other variant (an exclusion dropped it), which are not run."""
    if not switches_variant(switch) or a is None or b is None:  # None: unset, no variant
        return [CellPair(cell.id, cell, cell) for cell in cells], []
    twins = {_axes_part(cell.id, b): cell for cell in cells if cell.variant == b}
    pairs: list[CellPair] = []
    alone: list[Cell] = []
    for cell in cells:
        if cell.variant != a:
            continue
        twin = twins.pop(_axes_part(cell.id, a), None)
        if twin is None:
            alone.append(cell)
        else:
            pairs.append(CellPair(pair_label(a, b) + _axes_part(cell.id, a), cell, twin))
    alone += twins.values()
    return pairs, alone


def check_variants(switch: str, a: str | None, b: str | None, bench: Bench) -> None:
    """An A/B of the variant names two of the bench's variants (`--a`, `--b`)."""
    unknown = unknown_ab_variant(bench, a, b) if switches_variant(switch) else None
    if unknown is not None:
        raise UserError(f"--{unknown[0]}: {unknown[1]}")


def side_cells(pairs: Sequence[CellPair], side: str) -> list[Cell]:
    return [pair.cell(side) for pair in pairs]


def side_indices(pairs: Sequence[CellPair], switch: str, side: str) -> tuple[int, ...] | None:
    """The plan indices of the cells a side of an A/B of the variant runs; None: an A/B
    of an environment variable, whose sides run every cell chosen (`--only`)."""
    if not switches_variant(switch):
        return None
    return tuple(sorted(cell.index for cell in side_cells(pairs, side)))


def twin_ids(pairs: Sequence[CellPair]) -> dict[str, str]:
    """Each cell's id to its twin's, both ways (none in an A/B of an environment
    variable, whose pairs are one cell)."""
    twins = {pair.a.id: pair.b.id for pair in pairs if pair.a is not pair.b}
    return twins | {b: a for a, b in twins.items()}


def as_pair(cell: CellResult, switch: str, a: str | None, b: str | None) -> CellResult:
    """A side's result of a cell under the id and variant of its pair."""
    if not switches_variant(switch) or a is None or b is None or cell.variant not in (a, b):
        return cell
    label = pair_label(a, b)
    return cell.model_copy(update={"id": label + _axes_part(cell.id, cell.variant),
                                   "variant": label})


def _axes_part(cell_id: str, variant: str) -> str:
    """What a cell id says after its variant (`plan.cell_id`): its axes, as the plan
    ordered them (results may hold the axes themselves in another order)."""
    return cell_id[len(variant):]
