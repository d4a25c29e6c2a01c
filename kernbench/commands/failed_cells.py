"""The terminal's lines for a run's failed cells: one per reason, since a kernel broken
the same way in every cell (a factory that returns None, a missing import) would else
print the same reason once per cell, hundreds of lines for a sweep."""

from __future__ import annotations

from collections.abc import Sequence

from kernbench.results.model import CellResult
from kernbench.units import counted

NAMED = 3  # cells named on a line shared by several; the report lists every one


def failed_lines(cells: Sequence[CellResult]) -> list[str]:
    """`  failed: ID: REASON` for a reason one cell has; `  failed: N cells (ID, ID, ID and
    K more): REASON` for one several share, in the order the cells come."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for cell in cells:
        by_reason.setdefault((cell.status, cell.reason or "no reason given"), []).append(cell.id)
    lines = []
    for (status, reason), ids in by_reason.items():
        if len(ids) == 1:
            lines.append(f"  {status}: {ids[0]}: {reason}")
            continue
        named = ", ".join(ids[:NAMED]) + (f" and {len(ids) - NAMED} more" if len(ids) > NAMED
                                          else "")
        lines.append(f"  {status}: {counted(len(ids), 'cell')} ({named}): {reason}")
    return lines
