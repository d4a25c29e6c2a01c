"""How the figures mark a cell whose median its samples do not resolve (results:
`unresolved`, decided by `analyze.stats.unresolved`): a square around a line's point, a
cross-hatch on a bar. Beside `unsteady`'s ring and dots, and distinct from them: a cell
may be both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

LABEL = "unresolved (CI beyond ×2 of the median)"
COLOR = "#6a3d9a"
HATCH = "xx"
SQUARE: dict[str, Any] = {"marker": "s", "markersize": 11, "fillstyle": "none",
                          "linestyle": "none", "color": COLOR, "markeredgewidth": 1.2}


def square_points(ax: Axes, x: Sequence[float], y: Sequence[float]) -> None:
    """Square the points of a line whose medians are below what their samples resolve."""
    ax.plot(x, y, **SQUARE)


def hatch_bars(bars: BarContainer, flags: Sequence[bool]) -> None:
    """Cross-hatch the bars of unresolved cells: the height is a median its interval does
    not hold within a factor of two."""
    for bar, flag in zip(bars, flags, strict=True):
        if flag:
            bar.set_hatch((bar.get_hatch() or "") + HATCH)
            bar.set_edgecolor(COLOR)


def handle(bars: bool) -> Line2D | Patch:
    """The legend's key to the mark the layout draws."""
    if bars:
        return Patch(facecolor="white", edgecolor=COLOR, hatch=HATCH, label=LABEL)
    return Line2D([], [], **SQUARE, label=LABEL)
