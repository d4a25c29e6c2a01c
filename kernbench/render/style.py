"""The shared look of kernbench figures: colors, units, frames, marks and saving.

Every figure is drawn with matplotlib's object API on an Agg canvas (no pyplot, no
global state, no display), so rendering works headless and in parallel tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.transforms import blended_transform_factory, offset_copy

from kernbench.analyze.stats import CI_NAME
from kernbench.render import cache
from kernbench.render.wrap import FOOTNOTE_PT, FOOTNOTE_X, wrap_footnote
from kernbench.results import atomic
from kernbench.results.jsonio import write_json
from kernbench.results.model import CellResult, Results
from kernbench.results.provenance import code_label
from kernbench.spec.hardware import ceiling_source
from kernbench.spec.models import Ceiling, HardwareProfile
from kernbench.units import counted

# matplotlib's tab10, in a fixed order so a variant keeps its color across figures.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)
# Copy-in, compute, copy-out: one hue family each, whatever the kernel calls them.
STAGE_ORDER = ("h2d", "copy_in", "in", "fetch", "gemm", "compute", "kernel", "d2h", "copy_out")
STAGE_COLORS = {
    "h2d": "#4c72b0",
    "copy_in": "#4c72b0",
    "in": "#4c72b0",
    "fetch": "#8172b3",
    "gemm": "#dd8452",
    "compute": "#dd8452",
    "kernel": "#dd8452",
    "d2h": "#55a868",
    "copy_out": "#55a868",
}
UNDER_TILE_HATCH = "///"
WHISKER_LABEL = f"whisker: {CI_NAME} of the median"  # a rate's from its time's, mapped
UNSTEADY_HATCH = "..."  # rounds that disagree (results: `unsteady`)
UNSTEADY_COLOR = "#b35900"
UNSTEADY_RING: dict[str, Any] = {"marker": "o", "markersize": 9, "fillstyle": "none",
                                 "linestyle": "none", "color": UNSTEADY_COLOR}
UNSTEADY_BAR_RING: dict[str, Any] = {**UNSTEADY_RING, "markersize": 6}
UNSTEADY_RING_ABOVE_PT = 5.0  # the ring's centre above a bar's top
MISSING_COLOR = "#b22222"
CEILING_COLOR = "#555555"
FOOTNOTE_LIMIT = 6  # cells listed by name under a figure; the rest are counted
DPI = 120
LOG_SCALE_RANGE = 30.0  # values spanning more than this factor get a log axis
MAX_PANEL_WIDTH_IN = 16.0  # wider sweeps get thinner bars and slanted labels
SLANTS = (25.0, 45.0, 60.0)  # degrees a crowded category label may slant, shallowest first
SLANTED_LINE_IN = 0.17  # a line of 8 pt and the air it needs above the next one
NOTHING_MEASURED = "Nothing measured: every cell failed or was invalid (listed below)."


def variant_colors(variants: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(variants)}


def ordered_stages(names: Iterable[str]) -> list[str]:
    """Stages in pipeline order (copy in, compute, copy out), unknown ones after, by name."""
    unique = set(names)
    known = [name for name in STAGE_ORDER if name in unique]
    return known + sorted(unique - set(known))


def stage_color(name: str, position: int) -> str:
    return STAGE_COLORS.get(name, PALETTE[(position + 4) % len(PALETTE)])


def significant(value: float | None, digits: int = 6) -> float | None:
    """Rounded for figure data, so golden JSON diffs show changes, not float noise."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")


def device_name(results: Results) -> str:
    return results.provenance.get("device_name") or results.device


def title(results: Results, what: str) -> str:
    return f"{results.bench}: {what} on {device_name(results)}"


def not_plotted(cells: Iterable[CellResult]) -> list[dict[str, Any]]:
    """The figure data's list of cells left out, each with its status and why."""
    return [{"cell": cell.id, "status": cell.status, "reason": cell.reason} for cell in cells]


def nothing_measured(results: Results) -> str | None:
    """A figure's note when no cell of the results was measured."""
    return NOTHING_MEASURED if all(cell.status != "ok" for cell in results.cells) else None


def log_scale_fits(values: Sequence[Any]) -> bool:
    """All positive numbers, spanning more than LOG_SCALE_RANGE: a log axis reads best."""
    if not values or not all(isinstance(v, int | float) and v > 0 for v in values):
        return False
    return bool(max(values) / min(values) > LOG_SCALE_RANGE)


def ceiling_of(
    profile: HardwareProfile | None, pick: Callable[[HardwareProfile], Ceiling | None]
) -> tuple[float, str] | None:
    """`pick` of the hardware profile: its value, as the profile holds it, and where it
    comes from (`ceiling_source`); None without a profile, or where it gives none."""
    if profile is None or (ceiling := pick(profile)) is None:
        return None
    return ceiling.value, ceiling_source(profile, ceiling)


def profile_ceiling(
    profile: HardwareProfile | None, label: str,
    pick: Callable[[HardwareProfile], Ceiling | None],
) -> dict[str, Any] | None:
    """A figure's ceiling (`ceiling_of`): its label, value (`significant`) and source."""
    found = ceiling_of(profile, pick)
    if found is None:
        return None
    value, source = found
    return {"label": label, "value": significant(value), "source": source}


def bars_width(bars: int) -> float:
    """The width, in inches, of a panel of `bars` bars side by side."""
    return min(MAX_PANEL_WIDTH_IN, 2.0 + 0.4 * bars)


def footnote(results: Results) -> str:
    """Where the data came from: device, host, date, spec hash, rounds, model constants."""
    prov = results.provenance
    parts = [f"device {device_name(results)}"]
    if prov.get("host"):
        parts.append(f"host {prov['host']}")
    parts.append(f"run {results.created_utc[:16].replace('T', ' ')} UTC")
    parts.append(counted(results.rounds, "round"))
    split = len(parts)
    parts.append(f"spec {results.spec_hash[:12]}")
    if results.hardware:
        parts.append(f"hardware profile {results.hardware.get('name', '?')}")
    else:
        parts.append("no hardware profile")
    parts.append(code_label(prov))
    if not results.complete:
        parts.append("INCOMPLETE run")
    # Two lines: where and when it ran, then what defines the data.
    return "  ·  ".join(parts[:split]) + "\n" + "  ·  ".join(parts[split:])


def not_plotted_lines(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """`cell: status (reason)` for the first few cells left out of a figure."""
    lines = []
    for entry in entries[:FOOTNOTE_LIMIT]:
        reason = f" ({_shorten(entry['reason'], 70)})" if entry.get("reason") else ""
        lines.append(f"{entry['cell']}: {entry['status']}{reason}")
    if len(entries) > FOOTNOTE_LIMIT:
        lines.append(f"... and {len(entries) - FOOTNOTE_LIMIT} more (see results.json)")
    return lines


def _shorten(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def new_figure(rows: int, cols: int, panel_width: float, panel_height: float) -> Figure:
    """A figure of rows x cols panels plus room at the bottom for the footnote."""
    figure = Figure(
        figsize=(max(7.0, cols * panel_width), rows * panel_height + 1.4), layout="constrained"
    )
    FigureCanvasAgg(figure)
    return figure


def finish(figure: Figure, heading: str, data: Mapping[str, Any]) -> None:
    """Title, the provenance footnote and the list of cells that are not drawn."""
    # About 0.11 in per character at 12 pt bold: a long device name goes to a second line.
    if len(heading) * 0.11 > figure.get_figwidth() and " on " in heading:
        head, device = heading.rsplit(" on ", 1)
        heading = f"{head}\non {device}"
    figure.suptitle(heading, fontsize=12, fontweight="bold")
    lines = []
    if data.get("not_plotted"):
        lines.append(f"Not plotted ({counted(len(data['not_plotted']), 'cell')}, marked ×):")
        lines.extend("  " + line for line in not_plotted_lines(data["not_plotted"]))
    lines.append(data["footnote"])
    figure.supxlabel(wrap_footnote("\n".join(lines), figure.get_figwidth(), DPI),
                     fontsize=FOOTNOTE_PT, x=FOOTNOTE_X, ha="left", color="#444444")


def placeholder(heading: str, data: Mapping[str, Any]) -> Figure:
    """A figure that says why there is nothing to draw, so no stale PNG outlives its data."""
    figure = new_figure(1, 1, 8.0, 2.6)
    ax = figure.add_subplot()
    ax.set_axis_off()
    ax.text(
        0.5,
        0.5,
        data["note"],
        ha="center",
        va="center",
        fontsize=11,
        wrap=True,
        transform=ax.transAxes,
    )
    finish(figure, heading, data)
    return figure


def category_label(label: str, under_tile: bool) -> str:
    return f"{label}\nunder-tile" if under_tile else label


def category_ticks(ax: Axes, labels: Sequence[str], panel_width_in: float) -> None:
    """Category labels on the x axis, slanted when they would not fit side by side."""
    ax.set_xticks(range(len(labels)))
    longest = max((len(line) for label in labels for line in label.splitlines()), default=0)
    # About 0.075 in per character at 8 pt; leave a quarter of the panel for the margins.
    slot = 0.75 * panel_width_in / max(1, len(labels))
    crowded = longest * 0.075 > slot
    if crowded:
        # A second line under a slanted label would run into its neighbour's.
        one_line = [label.replace("\n", " ") for label in labels]
        ax.set_xticklabels(one_line, fontsize=8, rotation=slant(slot), ha="right",
                           rotation_mode="anchor")
    else:
        ax.set_xticklabels(labels, fontsize=8)


def slant(slot_in: float) -> float:
    """The shallowest of SLANTS that keeps slanted labels `slot_in` apart off each other:
    neighbouring baselines lie slot * sin(angle) apart, and a line of 8 pt needs about
    SLANTED_LINE_IN (the committed sweep's 17 shapes at 25 degrees ran into each other)."""
    return next((angle for angle in SLANTS
                 if slot_in * math.sin(math.radians(angle)) >= SLANTED_LINE_IN), 90.0)


def mark_under_tile(bars: BarContainer, flags: Sequence[bool]) -> None:
    """Hatch the bars of shapes smaller than the kernel's tile: a padded, not a real, rate."""
    for bar, flag in zip(bars, flags, strict=True):
        if flag:
            bar.set_hatch(UNDER_TILE_HATCH)
            bar.set_edgecolor("#333333")


def mark_unsteady(bars: BarContainer, flags: Sequence[bool]) -> None:
    """Dot the bars of cells whose rounds disagree beyond the timer's steady_tol: the
    height is a median of rounds that did not agree, so read it with care."""
    for bar, flag in zip(bars, flags, strict=True):
        if flag:
            bar.set_hatch((bar.get_hatch() or "") + UNSTEADY_HATCH)
            bar.set_edgecolor(UNSTEADY_COLOR)


def ring_above_unsteady(ax: Axes, bars: BarContainer, flags: Sequence[bool],
                        highs: Sequence[float | None] | None = None) -> None:
    """A small ring just above each flagged bar, or above its whisker (`highs`) where that
    reaches higher: the dots of `mark_unsteady` do not show on a bar a few pixels tall (a
    staged GEMM at 2% utilization), and a ring on a whisker hides both."""
    highs = highs if highs is not None else [None] * len(bars)
    tops = [(bar.get_x() + bar.get_width() / 2, max(bar.get_y() + bar.get_height(), high or 0))
            for bar, flag, high in zip(bars, flags, highs, strict=True) if flag]
    if tops:
        above = offset_copy(ax.transData, fig=ax.get_figure(root=True), y=UNSTEADY_RING_ABOVE_PT,
                            units="points")
        xs, ys = zip(*tops, strict=True)
        ax.plot(xs, ys, transform=above, **UNSTEADY_BAR_RING)


def unsteady_handle(ringed: bool = False) -> Patch | tuple[Patch, Line2D]:
    """The legend's unsteady mark: dots, and the ring above the bar where the bars have it."""
    dots = Patch(
        facecolor="white", edgecolor=UNSTEADY_COLOR, hatch=UNSTEADY_HATCH,
        label="unsteady (rounds disagree)",
    )
    return (dots, Line2D([], [], **UNSTEADY_BAR_RING)) if ringed else dots


def ring_unsteady(ax: Axes, x: Sequence[float], y: Sequence[float]) -> None:
    """Ring the points of a line whose cells' rounds disagree beyond the timer's steady_tol."""
    ax.plot(x, y, **UNSTEADY_RING)


def unsteady_ring_handle() -> Line2D:
    return Line2D([], [], **UNSTEADY_RING, label="unsteady (rounds disagree)")


def whisker_handle() -> Line2D:
    """The legend's key to the whiskers on a bar or a point: what interval they are."""
    return Line2D([], [], color="#222222", marker="|", markersize=9, linestyle="none",
                  label=WHISKER_LABEL)


def ceiling_line(ax: Axes, value: float, label: str | None = None) -> None:
    """A dotted line at a ceiling (a peak rate, the memory bandwidth, 100 %), its label
    written above the line's left end."""
    ax.axhline(value, color=CEILING_COLOR, linestyle=":", linewidth=1)
    if label is not None:
        ax.annotate(label, (0.005, value), xycoords=("axes fraction", "data"), ha="left",
                    va="bottom", fontsize=7, color=CEILING_COLOR)


def mark_missing(ax: Axes, x: float, text: str) -> Text:
    """A red × at the foot of an empty slot, with why it is empty (failed, invalid, n/a)."""
    foot = blended_transform_factory(ax.transData, ax.transAxes)
    return ax.text(
        x,
        0.02,
        f"×\n{text}",
        transform=foot,
        ha="center",
        va="bottom",
        fontsize=7,
        color=MISSING_COLOR,
        rotation=0,
        linespacing=0.9,
    )


def legend_handles(colors: Mapping[str, str], under_tile: bool, missing: bool) -> list[Any]:
    handles: list[Any] = [Patch(facecolor=color, label=name) for name, color in colors.items()]
    if under_tile:
        handles.append(
            Patch(
                facecolor="white",
                edgecolor="#333333",
                hatch=UNDER_TILE_HATCH,
                label="under-tile (M, N or K < tile)",
            )
        )
    if missing:
        handles.append(Patch(facecolor="none", edgecolor="none", label="× not measured"))
    return handles


def legend(ax: Axes, handles: Sequence[Any]) -> None:
    """One legend for all panels, right of the top panel (constrained layout makes room)."""
    # A tuple is one entry of several marks, named by its first.
    labels = [(h[0] if isinstance(h, tuple) else h).get_label() for h in handles]
    ax.legend(
        handles=list(handles),
        labels=labels,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        frameon=False,
    )


def save_figure(data: dict[str, Any], draw: Callable[[dict[str, Any]], Figure], out_dir: Path,
                name: str) -> Path:
    """`<name>.png` drawn from `data`, and the data itself as `<name>.json` (the golden
    output tests compare, not pixels)."""
    write_json(Path(out_dir) / f"{name}.json", data)
    path = Path(out_dir) / f"{name}.png"
    key = cache.figure_key(data, draw)
    if cache.fetch(key, path):
        return path
    save_png(draw(data), path)
    cache.store(key, path)
    return path


def save_png(figure: Figure, path: Path) -> Path:
    # No Software/date metadata: the same data gives the same bytes on the same matplotlib.
    with atomic.replaced(path) as tmp:
        figure.savefig(tmp, dpi=DPI, metadata={"Software": None}, format="png")
    return path
