"""When a line figure has too many lines to read, a grid of panels by one or two of its
other axes (docs/adr/0052-figures-that-fit-the-bench.md, addendum on panels).

The rule, decided here once: a panel shows at most MAX_LINES lines. When the whole figure
has more, the axes that name its series (never the variant: it is the colour) are tried
as panel axes, one alone before two together; of each, the first in this order that
brings every panel to MAX_LINES or fewer: an axis of words before an axis of numbers (a
dtype or a mask is a condition read apart; the lines of a size are compared in one plot),
then the axis of fewer values, then the bench's order. When no pair fits, the pair that
leaves the fewest lines a panel. Panels are the value combinations the cells have, so two
zipped axes make as many panels as their pairs, not the product of their values.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

from kernbench.render.series import is_number
from kernbench.results.model import CellResult

MAX_LINES = 8
MAX_COLUMNS = 4  # a single panel axis of more values wraps onto further rows


def split(cells: Sequence[CellResult], series: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """`{"panel_axes", "panels"}` for series too many for one plot, else None. Each panel:
    its `title`, its panel axes' `axes` values, its `row` and `col` in the grid and the
    `series` (labels) it draws."""
    if len(series) <= MAX_LINES:
        return None
    names = list(series[0]["axes"])
    if not names:
        return None
    chosen = _choose(_preferred(cells, names, series), series)
    return {"panel_axes": list(chosen), "panels": _panels(chosen, series)}


def _preferred(
    cells: Sequence[CellResult], names: Sequence[str], series: Sequence[dict[str, Any]]
) -> list[str]:
    def key(name: str) -> tuple[bool, int, int]:
        numeric = all(is_number(cell.axes.get(name)) for cell in cells)
        return numeric, len({s["axes"][name] for s in series}), names.index(name)

    return sorted(names, key=key)


def _choose(names: Sequence[str], series: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    for size in (1, 2):
        for chosen in combinations(names, size):
            if _most_lines(chosen, series) <= MAX_LINES:
                return chosen
    pairs: list[tuple[str, ...]] = list(combinations(names, 2)) or [tuple(names)]
    return min(pairs, key=lambda chosen: _most_lines(chosen, series))  # first on a tie


def _most_lines(chosen: Sequence[str], series: Sequence[dict[str, Any]]) -> int:
    counts: dict[tuple[str, ...], int] = {}
    for entry in series:
        key = tuple(entry["axes"][name] for name in chosen)
        counts[key] = counts.get(key, 0) + 1
    return max(counts.values())


def _panels(chosen: Sequence[str], series: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for entry in series:
        groups.setdefault(tuple(entry["axes"][name] for name in chosen), []).append(
            entry["label"])
    if len(chosen) == 2:
        rows = list(dict.fromkeys(key[0] for key in groups))
        cols = list(dict.fromkeys(key[1] for key in groups))
        place = {key: (rows.index(key[0]), cols.index(key[1])) for key in groups}
    else:
        place = {key: divmod(i, MAX_COLUMNS) for i, key in enumerate(groups)}
    return [
        {
            "title": " · ".join(f"{name}={value}" for name, value in zip(chosen, key, strict=True)),
            "axes": dict(zip(chosen, key, strict=True)),
            "row": place[key][0],
            "col": place[key][1],
            "series": labels,
        }
        for key, labels in groups.items()
    ]


SHARED_RANGE = {False: 3.0, True: 1000.0}  # by log axis: how far apart panel tops may lie


def share_value_axis(data: dict[str, Any]) -> None:
    """Set `share_y` of a panelled figure's data: one value axis for all panels, so they
    compare at a glance, unless one panel's top lies so far under another's that its lines
    would be flattened (a factor 3 on a linear axis, 1000 on a log one)."""
    if "panels" not in data:
        return
    by_label = {entry["label"]: entry for entry in data["series"]}
    tops = []
    for panel in data["panels"]:
        values = [p["high"] or p["value"] for label in panel["series"]
                  for p in by_label[label]["points"] if p["value"]]
        if values:
            tops.append(max(values))
    data["share_y"] = not tops or max(tops) / min(tops) <= SHARED_RANGE[bool(data["log_y"])]
