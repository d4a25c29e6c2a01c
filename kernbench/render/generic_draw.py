"""Drawing the generic figures from the data `render.generic` made (and nothing else)."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator

from kernbench.render import style, unresolved
from kernbench.render.series_look import Look, looks

LINE_PANEL_IN = (7.0, 4.2)
GRID_PANEL_IN = (4.6, 3.4)  # each panel of a grid (render.panels)
MAX_VALUE_TICKS = 8  # up to this many values measured along a line, a tick at each


def draw(data: dict[str, Any]) -> Figure:
    """The figure for data made by `render.generic.figure_data`."""
    if data.get("note"):
        return style.placeholder(data["title"], data)
    styles, handles = looks(data["series"], data.get("panel_axes", ()))
    if data["layout"] == "lines":
        figure, legend_ax = _draw_panels(data, styles)
    else:
        categories = list(dict.fromkeys(p["x"] for s in data["series"] for p in s["points"]))
        room = style.bars_width(len(categories) * len(data["series"]))
        figure = style.new_figure(1, 1, room, LINE_PANEL_IN[1])
        legend_ax = figure.add_subplot()
        _draw_bars(legend_ax, data, styles, categories, room)
        every = (data["series"], _ceilings(data, data["series"]))
        _finish_value_axis(legend_ax, data, every, every)
    if any(p.get("low") is not None for s in data["series"] for p in s["points"]):
        handles.append(style.whisker_handle())
    if data["not_plotted"]:
        handles.append(Line2D([], [], linestyle="none", label="× not measured"))
    if any(p.get("unsteady") for s in data["series"] for p in s["points"]):
        # The mark the layout draws: a ring on a line's point, dots on a bar.
        lines = data["layout"] == "lines"
        handles.append(style.unsteady_ring_handle() if lines
                       else style.unsteady_handle(ringed=True))
    if any(p.get("unresolved") for s in data["series"] for p in s["points"]):
        handles.append(unresolved.handle(bars=data["layout"] != "lines"))
    style.legend(legend_ax, handles)
    style.finish(figure, data["title"], data)
    return figure


def _draw_panels(data: dict[str, Any], styles: dict[str, Look]) -> tuple[Figure, Axes]:
    """The lines in one plot, or in the grid of panels `render.panels` chose; the axes the
    legend goes beside (the top right one)."""
    by_label = {entry["label"]: entry for entry in data["series"]}
    panels = data.get("panels") or [
        {"title": None, "row": 0, "col": 0, "series": list(by_label)}]
    rows = 1 + max(panel["row"] for panel in panels)
    cols = 1 + max(panel["col"] for panel in panels)
    size = LINE_PANEL_IN if len(panels) == 1 else GRID_PANEL_IN
    figure = style.new_figure(rows, cols, *size)
    grid = figure.subplots(rows, cols, squeeze=False, sharex=True,
                           sharey=bool(data.get("share_y")))
    shared = (data["series"], _ceilings(data, data["series"])) if data.get("share_y") else None
    for panel in panels:
        ax = grid[panel["row"]][panel["col"]]
        series = [by_label[label] for label in panel["series"]]
        shown = (series, _ceilings(data, series))
        _draw_lines(ax, data, series, styles)
        _finish_value_axis(ax, data, shown, shared or shown)
        if panel["title"]:
            ax.set_title(panel["title"], fontsize=9)
        if panel["col"]:
            ax.set_ylabel("")
    placed = {(panel["row"], panel["col"]) for panel in panels}
    for row in range(rows):
        for col in range(cols):
            if (row, col) not in placed:
                grid[row][col].remove()
            elif row + 1 < rows and (row + 1, col) not in placed:
                grid[row][col].xaxis.set_tick_params(labelbottom=True)
            elif row + 1 < rows:
                grid[row][col].set_xlabel("")
    return figure, grid[0][max(col for row, col in placed if row == 0)]


def _draw_lines(
    ax: Axes, data: dict[str, Any], shown: list[dict[str, Any]], styles: dict[str, Look]
) -> None:
    for entry in shown:
        # A cell with no value is a gap in its line, not a segment across it.
        points = entry["points"]
        xs = np.asarray([p["x"] for p in points], dtype=float)
        ys = np.asarray([np.nan if p["value"] is None else p["value"] for p in points])
        look = styles[entry["label"]]
        ax.errorbar(
            xs,
            ys,
            yerr=_error_extents(points),
            color=look.color,
            marker=look.marker,
            linestyle=look.linestyle,
            fillstyle=look.fillstyle,
            markersize=5,
            capsize=2,
            linewidth=1.4,
        )
        for point in entry["points"]:
            if point["value"] is None:
                style.mark_missing(ax, point["x"], _why_empty(point))
            else:
                if point.get("unsteady"):
                    style.ring_unsteady(ax, [point["x"]], [point["value"]])
                if point.get("unresolved"):
                    unresolved.square_points(ax, [point["x"]], [point["value"]])
    if data["log_x"]:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: _plain(value)))
    measured = sorted({p["x"] for s in data["series"] for p in s["points"]})
    if len(measured) <= MAX_VALUE_TICKS:
        # Ticks at the values measured (4096 and 7168 hidden), not at round numbers between.
        ax.set_xticks(measured)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: _plain(value)))
    ax.set_xlabel(data["x_label"] + (" (log scale)" if data["log_x"] else ""))
    ax.grid(True, which="major", alpha=0.3)


def _draw_bars(
    ax: Axes, data: dict[str, Any], styles: dict[str, Look], categories: list[str], room: float
) -> None:
    width = 0.8 / max(1, len(data["series"]))
    position = {label: i for i, label in enumerate(categories)}
    for i, entry in enumerate(data["series"]):
        offset = (i - (len(data["series"]) - 1) / 2) * width
        shown = [p for p in entry["points"] if p["value"] is not None]
        bars = ax.bar(
            [position[p["x"]] + offset for p in shown],
            [p["value"] for p in shown],
            width * 0.95,
            color=styles[entry["label"]].color,
            yerr=_error_extents(shown),
            error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "#222222"},
        )
        unsteady = [bool(p.get("unsteady")) for p in shown]
        style.mark_unsteady(bars, unsteady)
        style.ring_above_unsteady(ax, bars, unsteady, [p["high"] for p in shown])
        unresolved.hatch_bars(bars, [bool(p.get("unresolved")) for p in shown])
        for point in entry["points"]:
            if point["value"] is None:
                style.mark_missing(ax, position[point["x"]] + offset, _why_empty(point))
    style.category_ticks(ax, categories, room)
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.set_xlabel(data["x_label"])
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


# Some series of a figure, with the ceilings drawn over them (`_ceilings`).
WithCeilings = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def _finish_value_axis(ax: Axes, data: dict[str, Any], shown: WithCeilings,
                       scope: WithCeilings) -> None:
    """The ceilings of the `shown` series and the value axis, its range fitted to the
    `scope` series (all of them where the panels share it) and their ceilings."""
    for ceiling in shown[1]:
        style.ceiling_line(ax, ceiling["value"], f"{ceiling['label']} {ceiling['value']:.4g} "
                                                 f"{ceiling['unit']} ({ceiling['source']})")
    series, scope_ceilings = scope
    ceilings = [ceiling["value"] for ceiling in scope_ceilings]
    values = [p["high"] or p["value"] for s in series for p in s["points"]
              if p["value"] is not None] + ceilings
    if data["log_y"]:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _plain(value)))
        # A low end at or below zero has no place on a log axis (an interval of samples
        # less a flush estimate can reach below zero): the value stands for it.
        lows = [p["low"] if (p["low"] or 0) > 0 else p["value"] for s in series
                for p in s["points"] if p["value"] is not None and p["value"] > 0]
        if lows and values:  # room under the lowest bar, and above the ceiling's label
            ax.set_ylim(min(lows) / 2, max(values) * (3 if ceilings else 1.5))
    elif values:
        ax.set_ylim(0, max(values) * 1.15)
    ax.set_ylabel(data["y_label"] + (", log scale" if data["log_y"] else ""))


def _ceilings(data: dict[str, Any], shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ceilings drawn over these series: the memory bandwidth, or the peak of each dtype
    they show; dtypes of one peak (bf16 and fp16 on an H200) share one line."""
    found = [{**data["ceiling"], "unit": "GB/s"}] if data.get("ceiling") else []
    dtypes = {entry["axes"].get("dtype") for entry in shown}
    peaks: dict[tuple[float, str, str], list[str]] = {}
    for peak in data.get("ceilings", []):
        if None in dtypes or peak["dtype"] in dtypes:  # None: one dtype, not an axis
            peaks.setdefault((peak["value"], peak["unit"], peak["source"]), []).append(
                peak["dtype"])
    return found + [{"label": f"{', '.join(names)} peak", "value": value, "unit": unit,
                     "source": source} for (value, unit, source), names in peaks.items()]


def _error_extents(points: list[dict[str, Any]]) -> list[list[float]] | None:
    """Below and above each value; none at all when a drawn value has no interval."""
    drawn = [p for p in points if p["value"] is not None]
    if not drawn or not all(p["low"] is not None and p["high"] is not None for p in drawn):
        return None
    return [
        [max(0.0, p["value"] - p["low"]) if p["value"] is not None else 0.0 for p in points],
        [max(0.0, p["high"] - p["value"]) if p["value"] is not None else 0.0 for p in points],
    ]


def _why_empty(point: dict[str, Any]) -> str:
    return str(point["status"]) if point["status"] != "ok" else "n/a"


def _plain(value: float) -> str:
    """A tick label without exponents: 1048576, 0.01."""
    return f"{value:.0f}" if value >= 1 and float(value).is_integer() else f"{value:g}"
