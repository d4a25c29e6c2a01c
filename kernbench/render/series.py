"""Cells arranged as the generic figures show them: per variant, a line over the bench's
numeric axis when it has one, else bars over its cells.

What is plotted of a cell (its time, a rate) is the caller's `Value`; this module only
decides where each cell goes and what its series is called.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from kernbench.results.model import CellResult

# A cell's plotted point: {"value", "low", "high"} (None values when there is none), with
# "reason" when the cell is measured but has nothing to show.
Value = Callable[[CellResult], dict[str, Any]]


def line_axis(cells: Sequence[CellResult]) -> str | None:
    """The axis the lines run over: one whose values are all numbers and take at least
    two values; of several, the one with the most values (the first on a tie)."""
    best: tuple[int, str] | None = None
    for name in axis_names(cells):
        values = [cell.axes.get(name) for cell in cells]
        if not all(is_number(value) for value in values):
            continue
        distinct = len(set(values))
        if distinct >= 2 and (best is None or distinct > best[0]):
            best = (distinct, name)
    return best[1] if best else None


def axis_names(cells: Sequence[CellResult]) -> list[str]:
    """The cells' axes in the bench's order, as each cell's id names them. A cell's `axes`
    read back from results.json are sorted by name (its keys are written sorted), so ties
    broken by their order chose `experts` over `tokens` on a redraw where the run itself,
    in the bench's order, had chosen `tokens`."""
    names = list(dict.fromkeys(name for cell in cells for name in cell.axes))
    ids = [cell.id for cell in cells[:1]]

    def position(name: str) -> int:
        found = re.search(rf"[/,]{re.escape(name)}=", ids[0]) if ids else None
        return found.start() if found else len(ids[0]) if ids else 0

    return sorted(names, key=position)  # stable: names the id lacks keep their order


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def arrange(cells: Sequence[CellResult], value: Value) -> dict[str, Any]:
    """`{"layout", "x_axis", "series"}`: a series per variant (and per value of the other
    axes that vary, on a line, named in its `axes`), each a list of points at x (a number
    on a line, the cell's label on bars), in the order the plan made them (sorted by x on
    a line)."""
    axis = line_axis(cells)
    others = _varying(cells, exclude=axis) if axis else []
    series: dict[str, dict[str, Any]] = {}
    for cell in cells:
        label = _series_label(cell, others)
        entry = series.setdefault(label, {
            "label": label, "variant": cell.variant,
            "axes": {name: _text(cell.axes.get(name)) for name in others}, "points": []})
        x = cell.axes[axis] if axis else cell_label(cell)
        point = {"x": x, "cell": cell.id, "status": cell.status, **value(cell)}
        if cell.status != "ok":
            point["reason"] = cell.reason
        if cell.unsteady:
            point["unsteady"] = True
        if cell.unresolved:  # only when set: figure data of older results stays as it was
            point["unresolved"] = True
        entry["points"].append(point)
    if axis:
        for entry in series.values():
            entry["points"].sort(key=lambda point: point["x"])
    return {"layout": "lines" if axis else "bars", "x_axis": axis, "series": list(series.values())}


def _varying(cells: Sequence[CellResult], exclude: str | None) -> list[str]:
    """The axes besides `exclude` that take more than one value."""
    names = [name for name in axis_names(cells) if name != exclude]
    return [name for name in names if len({repr(cell.axes.get(name)) for cell in cells}) > 1]


def _series_label(cell: CellResult, others: Sequence[str]) -> str:
    parts = [f"{name}={_text(cell.axes.get(name))}" for name in others]
    return " · ".join([cell.variant, *parts]) if parts else cell.variant


def cell_label(cell: CellResult) -> str:
    """The cell's axis values as its id shows them (`size=1024,dtype=fp32`)."""
    return cell.id.split("/", 1)[1] if "/" in cell.id else cell.id


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return "x".join(str(v) for v in value.values())
    if isinstance(value, list):
        return "x".join(str(v) for v in value)
    return str(value)
