"""The A/B figure: per cell, the per-round deltas, their interval and the threshold band."""

from __future__ import annotations

from pathlib import Path

from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter

from kernbench.render.measured_on import where_measured
from kernbench.render.wrap import FOOTNOTE_PT, FOOTNOTE_X, wrap_footnote
from kernbench.results import atomic
from kernbench.results.ab import AbReport, only_flags, side_setting
from kernbench.units import counted

VERDICT_COLORS = {
    "faster": "#2e7d32",
    "slower": "#c62828",
    "same": "#607d8b",
    "unstable": "#ef8f00",
}


AB_FIGURE = "ab.png"  # the figure in an A/B folder
AB_DPI = 110
SYMLOG_ABOVE_PCT = 20  # widest delta, in thresholds, past which the x axis goes symlog
AB_PLOT_WIDTH_IN = 6.0  # the delta axis and the legend, besides the cell names
LABEL_IN_PER_CHAR = 0.085  # a cell name's width per character at 10 pt
# The height the legend (a row per entry, "small" type) and the footnote (7 pt) take, with
# the title and the delta axis's labels.
LEGEND_IN_BASE = 1.2
LEGEND_IN_PER_ROW = 0.22
NOTE_IN_PER_LINE = 0.13


def round_marker(schedule: str, a_first: bool) -> tuple[str, str]:
    """A round's marker and legend label. Sequential rounds alternate which side ran
    first; an interleaved round's sides take turns in ABBA blocks, so no side runs first
    (its `a_first` only reflects the sides' fixed numbering)."""
    if schedule == "interleaved":
        return "o", "round (ABBA turns)"
    return ("o", "round, A first") if a_first else ("^", "round, B first")


def draw_ab_figure(report: AbReport, path: Path) -> Path | None:
    """Write the figure to `path` (PNG); None when no cell has a verdict to draw."""
    figure = ab_figure(report)
    if figure is None:
        return None
    with atomic.replaced(path) as tmp:
        figure.savefig(tmp, dpi=AB_DPI, format="png")
    return path


def ab_figure(report: AbReport) -> Figure | None:
    """The figure of `report`; None when no cell has a verdict to draw."""
    cells = report.cells
    if not cells:
        return None
    # Figure (not pyplot): no global state, no display backend needed.
    # The cell names take their width from the figure's: long ones (44 characters of
    # variant/shape=...,dtype=...) left the delta axis a third of it.
    longest = max(len(cell.id) for cell in cells)
    width = max(8.0, AB_PLOT_WIDTH_IN + LABEL_IN_PER_CHAR * longest)
    footnote = wrap_footnote(_footnote(report), width, AB_DPI)
    markers = dict(round_marker(report.schedule, first) for first in (True, False))
    # Tall enough for the legend beside the axes and the footnote under them: an A/B of
    # one or two cells drew its legend over the footnote.
    rows = len(VERDICT_COLORS) + 2 + len(markers)
    height = max(1.4 + 0.45 * len(cells),
                 LEGEND_IN_BASE + LEGEND_IN_PER_ROW * rows + NOTE_IN_PER_LINE * (
                     footnote.count("\n") + 1))
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.add_subplot()
    for row, cell in enumerate(cells):
        y = len(cells) - 1 - row  # first cell on top
        color = VERDICT_COLORS[cell.verdict]
        axes.fill_betweenx(
            [y - 0.35, y + 0.35],
            -cell.threshold_pct,
            cell.threshold_pct,
            color="#9e9e9e",
            alpha=0.25,
            linewidth=0,
        )
        low, high = cell.ci_pct
        axes.plot([low, high], [y, y], color=color, linewidth=3, solid_capstyle="butt")
        axes.plot([cell.delta_pct], [y], marker="|", markersize=14, color=color)
        for delta, a_first in zip(cell.round_deltas_pct, cell.a_first, strict=True):
            axes.plot(
                [delta],
                [y + 0.15],
                linestyle="none",
                color=color,
                alpha=0.8,
                marker=round_marker(report.schedule, a_first)[0],
                markersize=5,
            )
    axes.axvline(0.0, color="black", linewidth=0.8)
    widest = max(abs(d) for cell in cells for d in [*cell.round_deltas_pct, *cell.ci_pct])
    thresholds = max(cell.threshold_pct for cell in cells)
    if widest > SYMLOG_ABOVE_PCT * max(thresholds, 1.0):
        # Linear around the thresholds, logarithmic beyond: a +600% cell and a +-2% cell
        # stay readable in one figure.
        linthresh = max(2 * thresholds, 1.0)
        axes.set_xscale("symlog", linthresh=linthresh)
        values = [d for cell in cells for d in [*cell.round_deltas_pct, *cell.ci_pct]]
        # Past ±linthresh on both sides, so both of its ticks are drawn and labelled.
        low, high = (min(min(values) * 1.5, -1.5 * linthresh),
                     max(max(values) * 1.5, 1.5 * linthresh))
        axes.set_xlim(low, high)
        # Unlabelled 2s and 5s between the decades (labels there collide on a narrow axis).
        steps = [sign * m * 10.0**e for sign in (-1, 1) for e in range(-1, 6) for m in (2, 5)]
        axes.xaxis.set_minor_locator(FixedLocator(
            [v for v in steps if abs(v) > linthresh and low < v < high]))
    # Signed plain numbers (+10, -1), never symlog's 10^1 with the sign left to the eye.
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:+g}" if value else "0"))
    axes.set_yticks(range(len(cells)), [cell.id for cell in reversed(cells)])
    axes.set_ylim(-0.7, len(cells) - 0.3)
    b_side, a_side = (side_setting(report.switch, value) for value in (report.b, report.a))
    axes.set_xlabel(f"time delta of B vs A (%), positive: B ({b_side}) slower")
    axes.set_ylabel("cell")
    axes.set_title(f"{report.bench}: {b_side} vs {a_side}, {_rounds_text(report)}")
    handles: list[Artist] = [
        Patch(color=color, label=name) for name, color in VERDICT_COLORS.items()
    ]
    handles.append(Patch(color="#9e9e9e", alpha=0.25, label="±threshold"))
    handles.append(Line2D([], [], color="black", linewidth=3, marker="|", markersize=14,
                          label=f"median, {_coverage_text(report)} interval"))
    handles += [Line2D([], [], linestyle="none", marker=marker, color="black", label=label)
                for marker, label in markers.items()]
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axes.grid(axis="x", alpha=0.3)
    figure.supxlabel(footnote, fontsize=FOOTNOTE_PT, x=FOOTNOTE_X, ha="left", color="#444444")
    return figure


def _footnote(report: AbReport) -> str:
    """Where, with what code and when it ran, and how it was judged: a saved PNG must say
    so on its own."""
    where = where_measured(report)
    parts = [where.code, f"run {report.created_utc[:16].replace('T', ' ')} UTC",
             f"{report.schedule} schedule", f"min effect {report.min_effect_pct:g}%"]
    if report.max_rounds:
        parts.append(f"rounds auto, up to {report.max_rounds}")
    if report.aa:
        parts.append("A/A side for the noise floor")
    if report.only:
        parts.append(f"cells chosen with {only_flags(report)}")
    lines = [f"measured on {where.machine}", "  ·  ".join(parts)]
    # Calls on intervals under 95 % look like any other in the figure: it says so itself.
    if report.summary.interval_note:
        lines.append(f"note: {report.summary.interval_note}")
    return "\n".join(lines + ([where.short_warning] if where.short_warning else []))


def _rounds_text(report: AbReport) -> str:
    """'6 rounds', or '2 of 6 rounds (interrupted)' for an A/B judged on the rounds that
    finished."""
    if report.planned_rounds:
        return f"{report.rounds} of {counted(report.planned_rounds, 'round')} (interrupted)"
    return counted(report.rounds, "round")


def _coverage_text(report: AbReport) -> str:
    """The intervals' coverage as the legend names it: '96.9 %', or a span ('50-96.9 %')
    where a cell was judged on fewer rounds."""
    coverages = sorted({round(100 * cell.ci_coverage, 1) for cell in report.cells})
    span = f"{coverages[0]:g}" if len(coverages) == 1 else f"{coverages[0]:g}-{coverages[-1]:g}"
    return f"{span} %"
