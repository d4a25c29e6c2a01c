"""GEMM figures: throughput, MAC utilization, roofline vs measured, stage breakdown.

Each figure is made in two steps: `gemm_figure_data` turns the results into the plain
data a figure shows (written beside the PNG as JSON, the golden output CI compares), and
a drawing function draws exactly that data. Metrics come from the results as recorded;
the renderer only converts units (see docs/adr/0050-figures-from-results.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from kernbench.errors import UserError
from kernbench.render import style
from kernbench.results.model import CellResult, Results
from kernbench.spec.models import HardwareProfile

GEMM_FIGURES = ("throughput", "utilization", "theory_vs_measured", "stage_breakdown")
NO_DTYPE = "-"
LOG_SCALE_RANGE = 30.0  # bars spanning more than this factor get a log axis
MAX_LABELLED_BARS = 48  # more value labels than this per panel overlap; leave them out
MAX_PANEL_WIDTH_IN = 16.0  # wider sweeps get thinner bars and slanted labels


@dataclass
class _Table:
    """The cells of a run arranged as the figures show them: dtype -> shape -> variant."""

    variants: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    shapes: dict[str, list[str]] = field(default_factory=dict)
    cells: dict[tuple[str, str, str], CellResult] = field(default_factory=dict)


CROWDED_TOTALS = 10  # stage-breakdown bars per panel past which the totals stand upright


def render_gemm(results: Results, out_dir: Path, figures: Sequence[str]) -> list[Path]:
    """Write `<name>.png` and its data `<name>.json` into `out_dir` for each GEMM figure."""
    out_dir = Path(out_dir)
    written = []
    for name in figures:
        written.append(style.save_figure(gemm_figure_data(results, name), draw, out_dir, name))
    return written


def gemm_figure_data(results: Results, name: str) -> dict[str, Any]:
    """The series one GEMM figure plots, as JSON-able data (None where nothing is drawn)."""
    if name not in _DATA:
        raise UserError(f"unknown GEMM figure {name!r}; known: {', '.join(GEMM_FIGURES)}")
    return _DATA[name](results)


def draw(data: dict[str, Any]) -> Figure:
    """The figure for data made by `gemm_figure_data`."""
    if not data["panels"]:
        return style.placeholder(data["title"], data)
    return _DRAW[data["figure"]](data)


# ---- data -----------------------------------------------------------------------------


def _table(cells: Sequence[CellResult]) -> _Table:
    table = _Table()
    size: dict[tuple[str, str], float] = {}
    for cell in cells:
        dtype = str(cell.params.get("dtype", NO_DTYPE))
        shape = shape_label(cell)
        if cell.variant not in table.variants:
            table.variants.append(cell.variant)
        if dtype not in table.dtypes:
            table.dtypes.append(dtype)
        table.shapes.setdefault(dtype, [])
        if shape not in table.shapes[dtype]:
            table.shapes[dtype].append(shape)
        table.cells[(dtype, shape, cell.variant)] = cell
        size[(dtype, shape)] = max(size.get((dtype, shape), 0.0), _work(cell))
    for dtype, shapes in table.shapes.items():
        shapes.sort(key=lambda shape: (size[(dtype, shape)], shape))
    return table


def shape_label(cell: CellResult) -> str:
    """`MxNxK` for GEMM cells; otherwise the non-dtype axis values."""
    params = cell.params
    if all(isinstance(params.get(key), int) for key in "MNK"):
        return f"{params['M']}x{params['N']}x{params['K']}"
    parts = []
    for name, value in cell.axes.items():
        if name == "dtype":
            continue
        if isinstance(value, dict):
            value = "x".join(str(v) for v in value.values())
        elif isinstance(value, list):
            value = "x".join(str(v) for v in value)
        parts.append(str(value))
    return ",".join(parts) or cell.variant


def _work(cell: CellResult) -> float:
    """What shapes are sorted by: the flops metric, else M*N*K (same order for a GEMM)."""
    if "flops" in cell.metrics:
        return cell.metrics["flops"]
    product = 1.0
    for key in "MNK":
        value = cell.params.get(key)
        product *= value if isinstance(value, int | float) else 1.0
    return product


def _header(results: Results, name: str, what: str, table: _Table) -> dict[str, Any]:
    return {
        "figure": name,
        "bench": results.bench,
        "device_name": results.provenance.get("device_name") or results.device,
        "title": style.title(results, what),
        "footnote": style.footnote(results),
        "variants": table.variants,
        "panels": [],
        "not_plotted": [],
    }


def _not_plotted(cells: Sequence[CellResult]) -> list[dict[str, Any]]:
    return [
        {"cell": cell.id, "status": cell.status, "reason": cell.reason}
        for cell in cells
        if cell.status != "ok"
    ]


def _peak(results: Results, dtype: str) -> tuple[float | None, str | None]:
    """The dtype's peak TFLOP/s the metrics used, and whether it is measured or datasheet."""
    if not results.hardware:
        return None, None
    profile = HardwareProfile.model_validate(results.hardware)
    ceiling = profile.peak_tflops.get(dtype)
    if ceiling is None:
        return None, None
    return ceiling.value, "measured" if ceiling.measured is not None else "datasheet"


def _bar(cell: CellResult, shape: str, metric: str, scale: float) -> dict[str, Any]:
    """One slot of a bar panel: the metric (times scale) and its CI, or why it is empty."""
    entry: dict[str, Any] = {
        "shape": shape,
        "variant": cell.variant,
        "status": cell.status,
        "under_tile": cell.under_tile,
        "value": None,
    }
    if cell.status != "ok":
        entry["reason"] = cell.reason
        return entry
    value = cell.metrics.get(metric)
    if value is None:
        entry["reason"] = f"no {metric} metric"
        return entry
    entry["value"] = style.significant(value * scale)
    summary = cell.summary
    if summary is not None and summary.ci_low_s > 0 and summary.ci_high_s > 0:
        # A rate is inversely proportional to time: the time CI maps to a rate CI.
        entry["low"] = style.significant(value * scale * summary.median_s / summary.ci_high_s)
        entry["high"] = style.significant(value * scale * summary.median_s / summary.ci_low_s)
    return entry


def _bar_data(
    results: Results, name: str, what: str, metric: str, scale: float, unit: str
) -> dict[str, Any]:
    table = _table(results.cells)
    data = _header(results, name, what, table)
    data["unit"] = unit
    data["metric"] = metric
    data["not_plotted"] = _not_plotted(results.cells)
    for dtype in table.dtypes:
        bars = [
            _bar(table.cells[(dtype, shape, variant)], shape, metric, scale)
            for shape in table.shapes[dtype]
            for variant in table.variants
            if (dtype, shape, variant) in table.cells
        ]
        peak, source = _peak(results, dtype)
        data["panels"].append(
            {
                "dtype": dtype,
                "shapes": table.shapes[dtype],
                "variants": [v for v in table.variants if any(b["variant"] == v for b in bars)],
                "peak_tflops": peak,
                "peak_source": source,
                "bars": bars,
            }
        )
    values = [b["value"] for p in data["panels"] for b in p["bars"] if b["value"]]
    if not values:
        data["panels"] = []
        data["note"] = _empty_note(results, metric)
    data["log_y"] = bool(values) and max(values) / min(values) > LOG_SCALE_RANGE
    return data


def _empty_note(results: Results, metric: str) -> str:
    if all(cell.status != "ok" for cell in results.cells):
        return "Nothing measured: every cell failed or was invalid (listed below)."
    missing = "" if results.hardware else " (no hardware profile, so no peak rates)"
    return f"No cell has a {metric!r} metric to plot{missing}."


def throughput_data(results: Results) -> dict[str, Any]:
    return _bar_data(results, "throughput", "GEMM throughput", "tflops", 1.0, "TFLOP/s")


def utilization_data(results: Results) -> dict[str, Any]:
    data = _bar_data(results, "utilization", "measured MAC utilization", "util", 100.0, "%")
    data["log_y"] = False  # a percentage of peak reads best on a linear 0-100 axis
    return data


def theory_vs_measured_data(results: Results) -> dict[str, Any]:
    data = _bar_data(
        results,
        "theory_vs_measured",
        "roofline model vs measured utilization",
        "util",
        100.0,
        "%",
    )
    data["log_y"] = False
    table = _table(results.cells)
    for panel in data["panels"]:
        for bar in panel["bars"]:
            cell = table.cells[(panel["dtype"], bar["shape"], bar["variant"])]
            model = cell.metrics.get("model_util") if cell.status == "ok" else None
            bar["model"] = style.significant(model * 100.0) if model is not None else None
            bar["of_model"] = (
                style.significant(bar["value"] / bar["model"], 3)
                if bar["value"] is not None and bar["model"]
                else None
            )
    return data


def staged_variants(results: Results) -> list[str]:
    """Variants that stage operands through the host: they have per-stage times."""
    variants: list[str] = []
    for cell in results.cells:
        staged = bool(cell.stages_s) or cell.params.get("staging") == "staged"
        if staged and cell.variant not in variants:
            variants.append(cell.variant)
    return variants


def stage_breakdown_data(results: Results) -> dict[str, Any]:
    staged = staged_variants(results)
    cells = [cell for cell in results.cells if cell.variant in staged]
    table = _table(cells)
    data = _header(results, "stage_breakdown", "stage breakdown of staged variants", table)
    data["unit"] = "% of the staged time"
    data["not_plotted"] = _not_plotted(cells)
    stages = style.ordered_stages(name for cell in cells for name in cell.stages_s)
    data["stages"] = stages
    for variant in table.variants:
        for dtype in table.dtypes:
            shapes = [s for s in table.shapes[dtype] if (dtype, s, variant) in table.cells]
            if shapes:
                bars = [_stage_bar(table.cells[(dtype, s, variant)], s) for s in shapes]
                data["panels"].append(
                    {"variant": variant, "dtype": dtype, "shapes": shapes, "bars": bars}
                )
    if not any(bar["stages_s"] for panel in data["panels"] for bar in panel["bars"]):
        data["panels"] = []
        data["note"] = (
            "No staged variant in this run: no cell recorded per-stage times\n"
            "(a staged variant copies operands in, runs the GEMM and copies the result out)."
        )
    return data


def _stage_bar(cell: CellResult, shape: str) -> dict[str, Any]:
    total = sum(cell.stages_s.values())
    entry: dict[str, Any] = {
        "shape": shape,
        "status": cell.status,
        "under_tile": cell.under_tile,
        "stages_s": {name: style.significant(value) for name, value in cell.stages_s.items()},
        "percent": {
            name: style.significant(100.0 * value / total, 4) if total > 0 else None
            for name, value in cell.stages_s.items()
        },
        "total_s": style.significant(total) if cell.stages_s else None,
        "median_s": style.significant(cell.summary.median_s) if cell.summary else None,
    }
    if cell.status != "ok":
        entry["reason"] = cell.reason
    elif not cell.stages_s:
        entry["reason"] = "no stage times"
    return entry


_DATA: dict[str, Callable[[Results], dict[str, Any]]] = {
    "throughput": throughput_data,
    "utilization": utilization_data,
    "theory_vs_measured": theory_vs_measured_data,
    "stage_breakdown": stage_breakdown_data,
}


# ---- drawing --------------------------------------------------------------------------


def _draw_bars(data: dict[str, Any]) -> Figure:
    colors = style.variant_colors(data["variants"])
    panels = data["panels"]
    widest = max(len(p["shapes"]) * max(1, len(p["variants"])) for p in panels)
    room = min(MAX_PANEL_WIDTH_IN, 2.0 + 0.4 * widest)
    figure = style.new_figure(len(panels), 1, room, 3.8)
    axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, panel in zip(axes, panels, strict=True):
        _draw_bar_panel(ax, panel, data, colors, room)
    any_under = any(b["under_tile"] for p in panels for b in p["bars"])
    handles = style.legend_handles(colors, any_under, bool(data["not_plotted"]))
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
    return figure


def _draw_bar_panel(
    ax: Axes, panel: dict[str, Any], data: dict[str, Any], colors: dict[str, str], room: float
) -> None:
    variants = panel["variants"]
    width = 0.8 / max(1, len(variants))
    position = {shape: i for i, shape in enumerate(panel["shapes"])}
    slot = {v: (i - (len(variants) - 1) / 2) * width for i, v in enumerate(variants)}
    label_bars = len(panel["bars"]) <= MAX_LABELLED_BARS
    for variant in variants:
        mine = [b for b in panel["bars"] if b["variant"] == variant]
        drawn = [b for b in mine if b["value"] is not None]
        xs = [position[b["shape"]] + slot[variant] for b in drawn]
        heights = [b["value"] for b in drawn]
        errors = _error_extents(drawn)
        bars = ax.bar(
            xs,
            heights,
            width * 0.95,
            color=colors[variant],
            yerr=errors,
            error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "#222222"},
        )
        style.mark_under_tile(bars, [b["under_tile"] for b in drawn])
        if data["figure"] == "theory_vs_measured":
            _draw_model_outline(ax, xs, drawn, width, colors[variant])
        if label_bars:
            _label_bars(ax, xs, drawn, data)
        for bar in mine:
            if bar["value"] is None:
                text = bar["status"] if bar["status"] != "ok" else "n/a"
                style.mark_missing(ax, position[bar["shape"]] + slot[variant], text)
    _finish_bar_axes(ax, panel, data, room)


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
            width * 0.95,
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
            text = f"{bar['value']:.3g}%"
        else:
            text = f"{bar['value']:.3g}"
        top = max(bar.get("high") or bar["value"], bar.get("model") or 0.0)
        ax.annotate(
            text,
            (x, top),
            xytext=(0, 2),
            textcoords="offset points",
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=6.5,
        )


def _finish_bar_axes(ax: Axes, panel: dict[str, Any], data: dict[str, Any], room: float) -> None:
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
        ax.axhline(100.0, color="#555555", linestyle=":", linewidth=1)
        ax.set_ylim(0, max([100.0, *tops]) * 1.22)
    else:
        scale = ", log scale" if data["log_y"] else ""
        ax.set_ylabel(f"{data['unit']} ({dtype}{scale})")
        if peak is not None:
            ax.axhline(peak, color="#555555", linestyle=":", linewidth=1)
            ax.annotate(
                f"{dtype} peak {peak:.4g} {data['unit']} ({panel['peak_source']})",
                (0.005, peak),
                xycoords=("axes fraction", "data"),
                ha="left",
                va="bottom",
                fontsize=7,
                color="#555555",
            )
            tops.append(peak)
        if data["log_y"]:
            ax.set_yscale("log")
            ax.set_ylim(min(b["value"] for b in panel["bars"] if b["value"]) / 3, max(tops) * 6)
        elif tops:
            ax.set_ylim(0, max(tops) * 1.25)
    ax.set_title(f"dtype {dtype}", fontsize=10, loc="left")
    if data["figure"] == "theory_vs_measured" and len(panel["bars"]) <= MAX_LABELLED_BARS:
        ax.set_title("label: measured ÷ model", fontsize=8, loc="right", color="#555555")


def _draw_stages(data: dict[str, Any]) -> Figure:
    panels = data["panels"]
    variants = list(dict.fromkeys(p["variant"] for p in panels))
    dtypes = list(dict.fromkeys(p["dtype"] for p in panels))
    widest = max(len(p["shapes"]) for p in panels)
    room = min(MAX_PANEL_WIDTH_IN / 2, 2.0 + 0.8 * widest)
    figure = style.new_figure(len(variants), len(dtypes), room, 3.6)
    grid = figure.subplots(len(variants), len(dtypes), squeeze=False)
    for ax in grid.flat:
        ax.set_axis_off()
    colors = {s: style.stage_color(s, i) for i, s in enumerate(data["stages"])}
    for panel in panels:
        ax = grid[variants.index(panel["variant"]), dtypes.index(panel["dtype"])]
        ax.set_axis_on()
        _draw_stage_panel(ax, panel, data["stages"], colors, room)
    handles = [Patch(facecolor=colors[s], label=s) for s in data["stages"]]
    if data["not_plotted"]:
        handles.append(Patch(facecolor="none", edgecolor="none", label="× not measured"))
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
                x, 101, style.format_seconds(bar["total_s"]), ha="center", va="bottom",
                fontsize=7, rotation=90 if crowded else 0,
            )
    under = {b["shape"] for b in panel["bars"] if b["under_tile"]}
    style.category_ticks(ax, [style.category_label(s, s in under) for s in panel["shapes"]], room)
    ax.set_ylim(0, 125 if crowded else 112)
    ax.set_ylabel("% of staged time")
    ax.set_xlabel("GEMM shape M×N×K (label: sum of stage medians)")
    ax.set_title(f"{panel['variant']} · {panel['dtype']}", fontsize=10, loc="left")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


_DRAW: dict[str, Callable[[dict[str, Any]], Figure]] = {
    "throughput": _draw_bars,
    "utilization": _draw_bars,
    "theory_vs_measured": _draw_bars,
    "stage_breakdown": _draw_stages,
}
