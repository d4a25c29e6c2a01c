"""How the generic figures tell their lines apart.

Colour is the variant, as in every kernbench figure; each other axis that varies gets a
mark of its own (marker shape, line style, filled or hollow), so the 24 lines of a top-k
sweep read as 2 colours and a legend of 9 keys. Colouring each line in turn ran out of
colours at 11 and drew two different lines in the same one. With one variant the axis of
the most values takes the colour. Where an axis has more values than any free mark has
forms, every line gets its own colour and marker pair and its own legend entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kernbench.render.style import PALETTE

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
FILLS = ("full", "none")
# In the order an axis takes them, the axis of the most values first.
MARKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("marker", MARKERS), ("linestyle", LINESTYLES), ("fillstyle", FILLS))
KEY_COLOR = "#444444"  # the legend's marks that are not a colour


@dataclass(frozen=True)
class Look:
    color: str
    marker: str = "o"
    linestyle: str = "-"
    fillstyle: str = "full"


def looks(
    series: Sequence[dict[str, Any]], panel_axes: Sequence[str] = ()
) -> tuple[dict[str, Look], list[Any]]:
    """Each series' look (by label) and the legend handles that explain them. An axis the
    figure is split into panels by (`render.panels`) is named by each panel's title and
    gets no mark; axes that vary together get one."""
    variants = list(dict.fromkeys(s["variant"] for s in series))
    axes = [a for a in (series[0].get("axes", {}) if series else {}) if a not in panel_axes]
    named = _named_values(series, axes)
    groups = list(named[0]) if named else []
    values = {group: list(dict.fromkeys(names[group] for names in named)) for group in groups}
    coloured = None if len(variants) > 1 or not groups else _most_values(groups, values)
    colours = variants if coloured is None else values[coloured]
    marked = _marks([g for g in groups if g != coloured], values)
    if marked is None or len(colours) > len(PALETTE):
        return _one_each(series)
    by_label = {}
    for entry, names in zip(series, named, strict=True):
        colour = entry["variant"] if coloured is None else names[coloured]
        chosen = {mark: forms[values[group].index(names[group])]
                  for group, (mark, forms) in marked.items()}
        by_label[entry["label"]] = Look(PALETTE[colours.index(colour)], **chosen)
    handles: list[Any] = [Patch(facecolor=PALETTE[i], label=name)
                          for i, name in enumerate(colours)]
    for group, (mark, forms) in marked.items():
        handles += [_key(mark, form, value)
                    for value, form in zip(values[group], forms, strict=False)]
    return by_label, handles


def _named_values(series: Sequence[dict[str, Any]], axes: Sequence[str]) -> list[dict[str, str]]:
    """Each series' values of `axes` as `axis=value`, axes that vary together joined into
    one (zipped heads and head_dim: `heads=32 · head_dim=64`), so they take one mark, not a
    marker and a line style for one thing."""
    groups: list[list[str]] = []
    for axis in axes:
        group = next((g for g in groups if _together(series, g[0], axis)), None)
        if group is None:
            groups.append([axis])
        else:
            group.append(axis)
    return [{" · ".join(group): " · ".join(f"{axis}={entry['axes'][axis]}" for axis in group)
             for group in groups} for entry in series]


def _together(series: Sequence[dict[str, Any]], one: str, other: str) -> bool:
    """Each value of one axis goes with a single value of the other, and back."""
    pairs = {(entry["axes"][one], entry["axes"][other]) for entry in series}
    return len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})


def _most_values(axes: Sequence[str], values: dict[str, list[str]]) -> str:
    return max(axes, key=lambda axis: len(values[axis]))  # the first of a tie


def _marks(
    axes: Sequence[str], values: dict[str, list[str]]
) -> dict[str, tuple[str, tuple[str, ...]]] | None:
    """Each axis's mark, the axis of the most values first; None when one does not fit."""
    free = list(MARKS)
    marked = {}
    for axis in sorted(axes, key=lambda a: -len(values[a])):
        fits = next((m for m in free if len(m[1]) >= len(values[axis])), None)
        if fits is None:
            return None
        free.remove(fits)
        marked[axis] = fits
    return marked


def _key(mark: str, form: str, label: str) -> Line2D:
    """The legend's key to one form of a mark, drawn in grey: it is not a colour."""
    key = Line2D([], [], color=KEY_COLOR, label=label)
    if mark == "linestyle":
        key.set(linestyle=form)
    else:
        key.set(linestyle="none", **({"marker": form} if mark == "marker" else
                                     {"marker": "o", "fillstyle": form}))
    return key


def _one_each(series: Sequence[dict[str, Any]]) -> tuple[dict[str, Look], list[Any]]:
    by_label = {}
    handles: list[Any] = []
    for i, entry in enumerate(series):
        look = Look(PALETTE[i % len(PALETTE)], MARKERS[(i // len(PALETTE)) % len(MARKERS)])
        by_label[entry["label"]] = look
        handles.append(Line2D([], [], color=look.color, marker=look.marker,
                              label=entry["label"]))
    return by_label, handles
