"""Collective figures: bus bandwidth vs message size and latency vs message size.

One panel per collective; one color per series (world size, dtype, in-place or not).
The bandwidth figure draws busbw solid and algbw dashed in the same color (busbw is a
normalization for a flat topology, algbw what one call moved), the latency figure the
median with its confidence interval; both draw the α-β model of the series as a dotted
line, fitted from the cells by today's method (`collective_fits`), never the fit stored
when the results were built: a figure agrees with its own data (ADR 0047 addendum).
With reference files (`kernbench render --reference`, repeatable; results/reference.py)
each series also shows each reference tool's times at its sizes as hollow markers, one
marker shape a reference (nccl-tests eager and `-G` disagree by up to 2x below 1 MiB on
2 H200s, so both are worth seeing).
Like the GEMM figures, each PNG comes with the data it plots as JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from kernbench.analyze import collective as collective_model
from kernbench.analyze.collective import (
    SeriesKey,
    is_collective_cell,
    series_key,
    series_label,
    series_name,
)
from kernbench.analyze.rates import GB
from kernbench.analyze.stats import CI_NAME
from kernbench.errors import UserError
from kernbench.render import style
from kernbench.results.model import CellResult, Fit, Results, collective_fits
from kernbench.results.reference import Reference
from kernbench.units import format_bytes, seconds_text

CCL_FIGURES = ("busbw", "latency")
MODEL_POINTS = 64
PANEL_WIDTH_IN, PANEL_HEIGHT_IN = 5.2, 4.0
MAX_SIZE_TICKS = 6
MARKER_SIZE, MARKER_STEP = 4.0, 1.5  # the last series' marks, and how much larger each before
_WHAT = {"busbw": "bus bandwidth vs message size", "latency": "latency vs message size"}
# Where each figure's curves are not: bandwidth climbs from the lower left to the upper
# right (the upper left holds the algbw lines once they flatten); latency is flat at the
# bottom and then climbs at the right.
FIT_BOX_CORNER = {"busbw": ("right", "bottom"), "latency": ("left", "top")}


def figure_data(results: Results, name: str) -> dict[str, Any]:
    """The series one collective figure plots, as JSON-able data."""
    if name not in CCL_FIGURES:
        raise UserError(f"unknown collective figure {name!r}; known: {', '.join(CCL_FIGURES)}")
    plotted = [cell for cell in results.cells if _plottable(cell)]
    fits = collective_fits(results.cells)
    panels = []
    for op in dict.fromkeys(str(cell.params["op"]) for cell in plotted):
        in_panel = [cell for cell in plotted if cell.params["op"] == op]
        keys = dict.fromkeys(series_key(cell.params) for cell in in_panel)
        series = [
            _series(key, [c for c in in_panel if series_key(c.params) == key], fits)
            for key in keys
        ]
        missing = [
            {"bytes": float(cell.params["bytes"]), "status": cell.status}
            for cell in results.cells
            if not _plottable(cell) and is_collective_cell(cell.params)
            and cell.params["op"] == op
        ]
        panels.append({"op": op, "series": series, "missing": missing})
    data: dict[str, Any] = {
        "figure": name,
        "bench": results.bench,
        "title": style.title(results, _WHAT[name]),
        "footnote": style.footnote(results),
        "panels": panels,
        "not_plotted": style.not_plotted(c for c in results.cells if not _plottable(c)),
    }
    if name == "busbw":  # against the per-GPU, one-way link bandwidth (nccl-tests' convention)
        ceiling = style.profile_ceiling(results.hardware_profile(),
                                        "interconnect per GPU, one way",
                                        lambda profile: profile.interconnect_gbs)
        if ceiling is not None:  # only when known: data without a profile stays as it was
            data["ceiling"] = ceiling
    if not panels:
        data["note"] = "No collective cell finished: nothing to plot."
    return data


# One hollow marker shape per reference, in the order given.
REFERENCE_MARKERS = ("s", "^", "D", "v", "P")


def reference_marker(index: int) -> str:
    """The hollow marker of the `index`-th reference given (in the series and the legend)."""
    return REFERENCE_MARKERS[index % len(REFERENCE_MARKERS)]


def with_references(data: dict[str, Any], references: Sequence[Reference]) -> dict[str, Any]:
    """`data` with each series' matching points of each reference (same op, world size,
    dtype and placement), as latency and busbw; a reference without any for a series is
    left out of it."""
    for panel in data["panels"]:
        for series in panel["series"]:
            key = (panel["op"], series["world_size"], series["dtype"], series["inplace"])
            sizes = (min(series["bytes"]), max(series["bytes"]))
            found = [_reference_points(reference, key, sizes) for reference in references]
            if any(found):
                series["references"] = [
                    {"marker": reference_marker(index), **points}
                    for index, points in enumerate(found) if points
                ]
    data["reference_sources"] = [reference.source for reference in references]
    return data


def _reference_points(
    reference: Reference, key: tuple[Any, ...], sizes: tuple[float, float]
) -> dict[str, Any]:
    """The reference's points of the series `key` within its sizes: one outside the size
    axis is not seen, but stretched the value axis (a 1 KiB reference point took the
    latency axis of an 8 MiB to 1 GiB sweep down a decade)."""
    low, high = sizes
    points = sorted(
        (p for p in reference.points
         if (p.op, p.world_size, p.dtype, p.inplace) == key and low <= p.bytes <= high),
        key=lambda p: p.bytes,
    )
    if not points:
        return {}
    return {
        "source": reference.source,
        "bytes": [float(p.bytes) for p in points],
        "latency_s": [style.significant(p.time_s) for p in points],
        "busbw_gbs": [
            style.significant(collective_model.bandwidths(
                p.op, float(p.bytes), p.world_size, p.time_s)["busbw_gbs"])
            for p in points
        ],
    }


def _plottable(cell: CellResult) -> bool:
    return cell.status == "ok" and cell.summary is not None and is_collective_cell(cell.params)


def _series(key: SeriesKey, cells: list[CellResult], fits: Mapping[str, Fit]) -> dict[str, Any]:
    op, world_size, dtype, inplace = key
    cells = sorted(cells, key=lambda cell: float(cell.params["bytes"]))
    sizes = [float(cell.params["bytes"]) for cell in cells]
    medians = [cell.summary.median_s for cell in cells if cell.summary is not None]
    rates = [_rates(op, cell, world_size) for cell in cells]
    series: dict[str, Any] = {
        "label": series_label(key),
        "world_size": world_size,
        "dtype": dtype,
        "inplace": inplace,
        "bytes": sizes,
        "latency_s": [style.significant(t) for t in medians],
        "ci_low_s": [style.significant(c.summary.ci_low_s) for c in cells if c.summary],
        "ci_high_s": [style.significant(c.summary.ci_high_s) for c in cells if c.summary],
        "busbw_gbs": [style.significant(r["busbw_gbs"]) for r in rates],
        "algbw_gbs": [style.significant(r["algbw_gbs"]) for r in rates],
        "model": None,
    }
    if any(cell.unsteady for cell in cells):  # only when set: older figure data stays as it was
        series["unsteady"] = [bool(cell.unsteady) for cell in cells]
    fitted = fits.get(series_name(key))
    if fitted is not None:
        fit = fitted.alpha_beta()
        grid = np.geomspace(min(sizes), max(sizes), MODEL_POINTS)
        times = collective_model.model_time(fit, grid)
        series["model"] = {
            "alpha_s": style.significant(fit.alpha_s),
            "beta_gbs": style.significant(fit.beta_bytes_per_s / GB),
            # β is message bytes a second (algbw); the ceiling and the solid lines are busbw.
            "beta_busbw_gbs": style.significant(fit.beta_bytes_per_s / GB
                                                * collective_model.busbw_factor(op, world_size)),
            "r2": style.significant(fit.r2, 4),
            "bytes": [style.significant(s) for s in grid],
            "latency_s": [style.significant(t) for t in times],
            "busbw_gbs": [
                style.significant(collective_model.bandwidths(op, s, world_size, t)["busbw_gbs"])
                for s, t in zip(grid, times, strict=True)
            ],
        }
    return series


def _rates(op: str, cell: CellResult, world_size: int) -> dict[str, float]:
    """The bandwidths the metrics recorded, else computed from the median the same way."""
    if "busbw_gbs" in cell.metrics and "algbw_gbs" in cell.metrics:
        return {key: cell.metrics[key] for key in ("algbw_gbs", "busbw_gbs")}
    assert cell.summary is not None
    return collective_model.bandwidths(
        op, float(cell.params["bytes"]), world_size, cell.summary.median_s
    )


# ---- drawing ----------------------------------------------------------------------------


def draw(data: dict[str, Any]) -> Figure:
    """The figure for data made by `figure_data`."""
    if not data["panels"]:
        return style.placeholder(data["title"], data)
    panels = data["panels"]
    figure = style.new_figure(1, len(panels), PANEL_WIDTH_IN, PANEL_HEIGHT_IN)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    labels = list(dict.fromkeys(s["label"] for panel in panels for s in panel["series"]))
    colors = {label: style.PALETTE[i % len(style.PALETTE)] for i, label in enumerate(labels)}
    for ax, panel in zip(axes, panels, strict=True):
        for index, series in enumerate(panel["series"]):
            # Each series drawn over the last on smaller marks: where two coincide (fp32
            # and bf16 of one op), the one beneath still shows, as a ring round the other.
            size = MARKER_SIZE + MARKER_STEP * (len(panel["series"]) - 1 - index)
            if data["figure"] == "busbw":
                _draw_bandwidth(ax, series, colors[series["label"]], size)
            else:
                _draw_latency(ax, series, colors[series["label"]], size)
        ax.set_title(panel["op"], fontsize=11)
        _fit_box(ax, panel["series"], *FIT_BOX_CORNER[data["figure"]],
                 bus=data["figure"] == "busbw")
        sizes = [b for s in panel["series"] for b in s["bytes"]]
        _size_axis(ax, sizes + [m["bytes"] for m in panel["missing"]])
        for missing in panel["missing"]:
            style.mark_missing(ax, missing["bytes"], missing["status"])
        ax.grid(True, which="major", alpha=0.3)
        ax.grid(True, which="minor", alpha=0.1)
        if data.get("ceiling"):
            _draw_ceiling(ax, data["ceiling"])
    if data["figure"] == "busbw":
        axes[0].set_ylabel("bandwidth (GB/s, 1 GB = 10⁹ bytes)")
    else:
        axes[0].set_ylabel("latency per call (µs)")
    style.legend(axes[-1], _legend_handles(data, colors))
    style.finish(figure, data["title"], data)
    return figure


def _draw_bandwidth(ax: Axes, series: dict[str, Any], color: str, size: float) -> None:
    sizes = series["bytes"]
    ax.plot(sizes, series["busbw_gbs"], "o-", color=color, markersize=size, linewidth=1.6)
    ax.plot(sizes, series["algbw_gbs"], "--", color=color, linewidth=1.0, alpha=0.7)
    model = series["model"]
    if model:
        ax.plot(model["bytes"], model["busbw_gbs"], ":", color=color, linewidth=1.2)
    _draw_reference(ax, series, "busbw_gbs", 1.0, color)
    _ring_unsteady(ax, series, series["busbw_gbs"])
    _log_value_axis(ax)


def _draw_ceiling(ax: Axes, ceiling: dict[str, Any]) -> None:
    value = ceiling["value"]
    # Short: a long label runs into the algbw lines, which may pass the ceiling.
    style.ceiling_line(ax, value, f"{ceiling['label']}: {value:.4g} GB/s ({ceiling['source']})")
    low, high = ax.get_ylim()
    ax.set_ylim(low, max(high, value * 2))  # room for the line's label above it


def _ring_unsteady(ax: Axes, series: dict[str, Any], values: Sequence[float]) -> None:
    flags = series.get("unsteady", [])
    shown = [(x, y) for x, y, flag in zip(series["bytes"], values, flags, strict=False) if flag]
    if shown:
        style.ring_unsteady(ax, *zip(*shown, strict=True))


def _draw_reference(ax: Axes, series: dict[str, Any], what: str, scale: float, color: str) -> None:
    for reference in series.get("references", []):
        values = [v * scale for v in reference[what]]
        ax.plot(reference["bytes"], values, reference["marker"], color=color,
                fillstyle="none", markersize=6)


def _draw_latency(ax: Axes, series: dict[str, Any], color: str, size: float) -> None:
    sizes = np.asarray(series["bytes"], dtype=float)
    median = np.asarray(series["latency_s"], dtype=float) * 1e6
    low = np.asarray(series["ci_low_s"], dtype=float) * 1e6
    high = np.asarray(series["ci_high_s"], dtype=float) * 1e6
    error = np.vstack([np.clip(median - low, 0, None), np.clip(high - median, 0, None)])
    ax.errorbar(sizes, median, yerr=error, fmt="o-", color=color, markersize=size, capsize=2)
    model = series["model"]
    if model:
        model_us = np.asarray(model["latency_s"], dtype=float) * 1e6
        ax.plot(model["bytes"], model_us, ":", color=color, linewidth=1.2)
    _draw_reference(ax, series, "latency_s", 1e6, color)
    _ring_unsteady(ax, series, list(median))
    _log_value_axis(ax)


def _legend_handles(data: dict[str, Any], colors: dict[str, str]) -> list[Any]:
    handles: list[Any] = [
        Line2D([], [], color=color, label=label) for label, color in colors.items()
    ]
    if data["figure"] == "busbw":
        handles += [
            Line2D([], [], color="#333333", marker="o", markersize=4, label="busbw (measured)"),
            Line2D([], [], color="#333333", linestyle="--", label="algbw = bytes / time"),
        ]
    else:
        handles.append(
            Line2D([], [], color="#333333", marker="o", markersize=4, label=f"median, {CI_NAME}")
        )
    handles.append(Line2D([], [], color="#333333", linestyle=":", label="α-β model: t = α + S/β"))
    if any(s.get("unsteady") for panel in data["panels"] for s in panel["series"]):
        handles.append(style.unsteady_ring_handle())
    for index, source in enumerate(data.get("reference_sources", [])):
        handles.append(Line2D([], [], color="#333333", fillstyle="none", linestyle="none",
                              marker=reference_marker(index),
                              label=source))
    return handles


def _fit_box(
    ax: Axes, series: Sequence[dict[str, Any]], side: str, end: str, bus: bool = False
) -> None:
    lines = [f"{s['label']}: {_fit_text(s['model'], bus)}" for s in series if s["model"]]
    if lines:
        ax.text(
            0.98 if side == "right" else 0.02,
            0.98 if end == "top" else 0.02,
            "\n".join(lines),
            transform=ax.transAxes,
            ha=side,
            va=end,
            multialignment="left",
            fontsize=7,
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "#cccccc"},
        )


def _log_value_axis(ax: Axes) -> None:
    """Log scale with plain numbers (0.01, 30, 200), never 3×10⁻²."""
    ax.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    ax.yaxis.set_major_formatter(plain)
    # Minor labels only where the axis spans under about a decade (else no major ones).
    low, high = ax.get_ylim()
    few_decades = high / low < 20 if low > 0 else False
    ax.yaxis.set_minor_formatter(plain if few_decades else NullFormatter())


def _fit_text(model: dict[str, Any], bus: bool = False) -> str:
    """α, β and R²; against busbw lines, β's busbw in place of R² where it differs (an
    allgather's β of 472 GB/s is 236 GB/s of busbw, the number to hold against the link's
    450; the box must stay as narrow, or it runs over the small messages' line)."""
    alpha = seconds_text(model["alpha_s"]) if model["alpha_s"] is not None else "?"
    beta = model["beta_gbs"]
    beta_text = f"{beta:.3g} GB/s" if beta is not None and math.isfinite(beta) else "∞"
    busbw = model.get("beta_busbw_gbs")
    if bus and busbw is not None and beta is not None and f"{busbw:.3g}" != f"{beta:.3g}":
        return f"α={alpha}, β={beta_text} (busbw {busbw:.3g})"
    return f"α={alpha}, β={beta_text}, R²={model['r2']}"


def _size_axis(ax: Axes, sizes: Sequence[float]) -> None:
    """Log2 size axis with ticks at powers of two labelled in B/KiB/MiB/GiB."""
    ax.set_xscale("log", base=2)
    low = math.floor(math.log2(min(sizes)))
    high = math.ceil(math.log2(max(sizes)))
    step = max(1, math.ceil((high - low + 1) / MAX_SIZE_TICKS))
    ax.xaxis.set_major_locator(FixedLocator([2.0**p for p in range(low, high + 1, step)]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(min(sizes) / 1.4, max(sizes) * 1.4)  # room for a × at either end
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: format_bytes(value)))
    ax.set_xlabel("message size (bytes; nccl-tests convention)")
