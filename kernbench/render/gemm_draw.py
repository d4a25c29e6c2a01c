"""Drawing the GEMM figures from the data `render.gemm` made (and nothing else)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text

from kernbench.render import style
from kernbench.units import seconds_text

LABEL_FONT_PT = 6.5  # the value label above a bar, drawn upright (rotated 90 degrees)
LABEL_LINE = 1.2  # a line of text is this many times its font size tall, with its air
AXIS_MARGIN_IN = 0.9  # what a panel's y label and tick labels take off the figure's width
BAR_FILL = 0.95  # a bar's share of its slot; the rest is the gap to its neighbour
CROWDED_TOTALS = 10  # stage-breakdown bars per panel past which the totals stand upright


def draw(data: dict[str, Any]) -> Figure:
    """The figure for data made by `render.gemm.figure_data`."""
    if not data["panels"]:
        return style.placeholder(data["title"], data)
    return _DRAW[data["figure"]](data)


def _draw_bars(data: dict[str, Any]) -> Figure:
    colors = style.variant_colors(data["variants"])
    panels = data["panels"]
    widest = max(len(p["shapes"]) * max(1, len(p["variants"])) for p in panels)
    room = style.bars_width(widest)
    figure = style.new_figure(len(panels), 1, room, 3.8)
    axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
    marks: list[tuple[Axes, Text]] = []
    for ax, panel in zip(axes, panels, strict=True):
        marks += _draw_bar_panel(ax, panel, data, colors, room,
                                 labels_fit(panel, figure.get_figwidth()))
    any_under = any(b["under_tile"] for p in panels for b in p["bars"])
    handles = style.legend_handles(colors, any_under, bool(data["not_plotted"]))
    if any("low" in b for p in panels for b in p["bars"]):
        handles.append(style.whisker_handle())
    if any(b.get("unsteady") for p in panels for b in p["bars"]):
        handles.append(style.unsteady_handle(ringed=True))
    if data["figure"] == "theory_vs_measured":
        handles += [
            Patch(facecolor="#999999", label="measured (filled)"),
            Patch(
                facecolor="none",
                edgecolor="#333333",
                linestyle="--",
                label="roofline model (outline)",
            ),
        ]
    style.legend(axes[0], handles)
    style.finish(figure, data["title"], data)
    _shorten_crowded_marks(figure, marks)
    return figure


def _shorten_crowded_marks(figure: Figure, marks: list[tuple[Axes, Text]]) -> None:
    """A missing bar's mark says why (× over "failed", 7 pt across) where that clears the
    texts beside it, and is the × alone where it would run into them: a bar is narrower
    than the word (the footnote lists every such cell with its reason). Measured once the
    layout is done, as the legend beside the panels takes its width only then."""
    if not marks:
        return
    figure.draw_without_rendering()
    for ax, mark in marks:
        box = mark.get_window_extent()
        others = (t for t in ax.texts if t is not mark and t.get_text().strip())
        if any(box.overlaps(other.get_window_extent()) for other in others):
            mark.set_text("×")


def _draw_bar_panel(
    ax: Axes, panel: dict[str, Any], data: dict[str, Any], colors: dict[str, str], room: float,
    label_bars: bool,
) -> list[tuple[Axes, Text]]:
    """The panel's bars, and the marks of its missing ones."""
    marks = []
    variants = panel["variants"]
    width = 0.8 / max(1, len(variants))
    position = {shape: i for i, shape in enumerate(panel["shapes"])}
    slot = {v: (i - (len(variants) - 1) / 2) * width for i, v in enumerate(variants)}
    for variant in variants:
        mine = [b for b in panel["bars"] if b["variant"] == variant]
        drawn = [b for b in mine if b["value"] is not None]
        xs = [position[b["shape"]] + slot[variant] for b in drawn]
        heights = [b["value"] for b in drawn]
        errors = _error_extents(drawn)
        bars = ax.bar(
            xs,
            heights,
            width * BAR_FILL,
            color=colors[variant],
            yerr=errors,
            error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "#222222"},
        )
        style.mark_under_tile(bars, [b["under_tile"] for b in drawn])
        unsteady = [bool(b.get("unsteady")) for b in drawn]
        style.mark_unsteady(bars, unsteady)
        style.ring_above_unsteady(ax, bars, unsteady, [b.get("high") for b in drawn])
        if data["figure"] == "theory_vs_measured":
            _draw_model_outline(ax, xs, drawn, width, colors[variant])
        if label_bars:
            _label_bars(ax, xs, drawn, data)
        for bar in mine:
            if bar["value"] is None:
                text = bar["status"] if bar["status"] != "ok" else "n/a"
                at = position[bar["shape"]] + slot[variant]
                marks.append((ax, style.mark_missing(ax, at, text)))
    _finish_bar_axes(ax, panel, data, room, label_bars)
    return marks


def labels_fit(panel: dict[str, Any], figure_width_in: float) -> bool:
    """Whether an upright value label fits across each bar of `panel` in a figure
    `figure_width_in` wide: a bar's width in points against the label's line height. A
    count of bars alone ignored the width (68 bars of 16 in are 12 pt wide each)."""
    slots = len(panel["shapes"]) + 0.2  # the x axis runs from -0.6 to len(shapes) - 0.4
    if not panel["shapes"]:
        return False
    bar_data = BAR_FILL * 0.8 / max(1, len(panel["variants"]))
    bar_pt = (figure_width_in - AXIS_MARGIN_IN) * 72 / slots * bar_data
    return bar_pt >= LABEL_FONT_PT * LABEL_LINE


def _error_extents(bars: list[dict[str, Any]]) -> list[list[float]] | None:
    if not bars or not all("low" in b and "high" in b for b in bars):
        return None
    below = [max(0.0, b["value"] - b["low"]) for b in bars]
    above = [max(0.0, b["high"] - b["value"]) for b in bars]
    return [below, above]


def _draw_model_outline(
    ax: Axes, xs: list[float], bars: list[dict[str, Any]], width: float, color: str
) -> None:
    modelled = [
        (x, b["model"]) for x, b in zip(xs, bars, strict=True) if b.get("model") is not None
    ]
    if modelled:
        ax.bar(
            [x for x, _ in modelled],
            [m for _, m in modelled],
            width * BAR_FILL,
            facecolor="none",
            edgecolor=color,
            linestyle="--",
            linewidth=1.3,
        )


def _label_bars(
    ax: Axes, xs: list[float], bars: list[dict[str, Any]], data: dict[str, Any]
) -> None:
    """The value above each bar (above its CI and model outline, so nothing overlaps)."""
    for x, bar in zip(xs, bars, strict=True):
        if data["figure"] == "theory_vs_measured":
            text = f"{bar['of_model']:.0%}" if bar.get("of_model") else ""
        elif data["unit"] == "%":
            text = f"{_three_digits(bar['value'])}%"
        else:
            text = _three_digits(bar["value"])
        top = max(bar.get("high") or bar["value"], bar.get("model") or 0.0)
        ringed = bool(bar.get("unsteady"))  # its ring sits above the bar: clear it
        ax.annotate(
            text,
            (x, top),
            xytext=(0, 2 + (2 * style.UNSTEADY_RING_ABOVE_PT if ringed else 0)),
            textcoords="offset points",
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=LABEL_FONT_PT,
        )


def _three_digits(value: float) -> str:
    """About three significant digits, never an exponent: 1537 TFLOP/s is '1537', not
    '1.54e+03' (a reader compares these labels digit by digit)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _finish_bar_axes(
    ax: Axes, panel: dict[str, Any], data: dict[str, Any], room: float, labelled: bool
) -> None:
    shapes = panel["shapes"]
    under = {b["shape"] for b in panel["bars"] if b["under_tile"]}
    style.category_ticks(ax, [style.category_label(s, s in under) for s in shapes], room)
    ax.set_xlim(-0.6, len(shapes) - 0.4)
    ax.set_xlabel("GEMM shape M×N×K (sorted by FLOPs)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    dtype = panel["dtype"]
    peak = panel["peak_tflops"]
    tops = [b.get("high") or b["value"] for b in panel["bars"] if b["value"] is not None]
    tops += [b["model"] for b in panel["bars"] if b.get("model") is not None]
    if data["unit"] == "%":
        ax.set_ylabel(f"utilization (% of {dtype} peak)")
        style.ceiling_line(ax, 100.0)
        ax.set_ylim(0, max([100.0, *tops]) * 1.22)
    else:
        scale = ", log scale" if data["log_y"] else ""
        ax.set_ylabel(f"{data['unit']} ({dtype}{scale})")
        if peak is not None:
            style.ceiling_line(ax, peak)
            tops.append(peak)
        if data["log_y"]:
            ax.set_yscale("log")
            ax.set_ylim(min(b["value"] for b in panel["bars"] if b["value"]) / 3, max(tops) * 6)
        elif tops:
            ax.set_ylim(0, max(tops) * 1.25)
    heading = f"dtype {dtype}"
    if peak is not None:
        # Which peak: a measured one makes the best cell read ~100% by construction. In the
        # title, not on the line, where the labels of the tallest bars would run into it.
        line = "100%" if data["unit"] == "%" else "dotted line"
        heading += f"  ·  {line} = peak {peak:.4g} TFLOP/s ({panel['peak_source']})"
    ax.set_title(heading, fontsize=10, loc="left")
    if data["figure"] == "theory_vs_measured" and labelled:
        ax.set_title("label: measured ÷ model", fontsize=8, loc="right", color="#555555")


def _draw_stages(data: dict[str, Any]) -> Figure:
    panels = data["panels"]
    variants = list(dict.fromkeys(p["variant"] for p in panels))
    dtypes = list(dict.fromkeys(p["dtype"] for p in panels))
    widest = max(len(p["shapes"]) for p in panels)
    room = min(style.MAX_PANEL_WIDTH_IN / 2, 2.0 + 0.8 * widest)
    figure = style.new_figure(len(variants), len(dtypes), room, 3.6)
    grid = figure.subplots(len(variants), len(dtypes), squeeze=False)
    for ax in grid.flat:
        ax.set_axis_off()
    colors = {s: style.stage_color(s, i) for i, s in enumerate(data["stages"])}
    for panel in panels:
        ax = grid[variants.index(panel["variant"]), dtypes.index(panel["dtype"])]
        ax.set_axis_on()
        _draw_stage_panel(ax, panel, data["stages"], colors, room)
        if dtypes.index(panel["dtype"]) == 0:  # one y label a row: beside it, it collides
            ax.set_ylabel("% of staged time")
    handles: list[Any] = [Patch(facecolor=colors[s], label=s) for s in data["stages"]]
    if data["not_plotted"]:
        handles.append(Patch(facecolor="none", edgecolor="none", label="× not measured"))
    if any(b.get("unsteady") for p in panels for b in p["bars"]):
        handles.append(style.unsteady_handle())
    style.legend(grid[0, -1], handles)
    style.finish(figure, data["title"], data)
    return figure


def _draw_stage_panel(
    ax: Axes, panel: dict[str, Any], stages: list[str], colors: dict[str, str], room: float
) -> None:
    xs = range(len(panel["shapes"]))
    bottom = [0.0] * len(panel["bars"])
    for stage in stages:
        shares = [b["percent"].get(stage) or 0.0 for b in panel["bars"]]
        bars = ax.bar(xs, shares, 0.6, bottom=bottom, color=colors[stage])
        style.mark_under_tile(bars, [b["under_tile"] for b in panel["bars"]])
        style.mark_unsteady(bars, [bool(b.get("unsteady")) for b in panel["bars"]])
        for x, share, base in zip(xs, shares, bottom, strict=True):
            if share >= 8:
                ax.text(
                    x,
                    base + share / 2,
                    f"{share:.0f}%",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
        bottom = [b + s for b, s in zip(bottom, shares, strict=True)]
    crowded = len(panel["bars"]) > CROWDED_TOTALS  # upright totals would overlap
    for x, bar in zip(xs, panel["bars"], strict=True):
        if bar["total_s"] is None:
            style.mark_missing(ax, x, bar["status"] if bar["status"] != "ok" else "n/a")
        else:
            ax.text(
                x, 101, seconds_text(bar["total_s"]), ha="center", va="bottom",
                fontsize=7, rotation=90 if crowded else 0,
            )
    under = {b["shape"] for b in panel["bars"] if b["under_tile"]}
    style.category_ticks(ax, [style.category_label(s, s in under) for s in panel["shapes"]], room)
    ax.set_ylim(0, 132 if crowded else 112)
    ax.set_xlabel("GEMM shape M×N×K\n(above a bar: the sum of its stage medians)", fontsize=9)
    ax.set_title(f"{panel['variant']} · {panel['dtype']}", fontsize=10, loc="left")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


_DRAW: dict[str, Callable[[dict[str, Any]], Figure]] = {
    "throughput": _draw_bars,
    "utilization": _draw_bars,
    "theory_vs_measured": _draw_bars,
    "stage_breakdown": _draw_stages,
}
