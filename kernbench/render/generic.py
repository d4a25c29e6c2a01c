"""Figures that fit any bench: time per call, throughput (of flops, bytes or a `rates:`
count), and achieved memory bandwidth against the device's.

Each is a line per variant over the bench's numeric axis, or bars over its cells when it
has none (`render.series`). Titles and labels come from the bench: its axis names and the
units of its metrics, never a kind of kernel it is not. Like every renderer, the data a
figure plots is written beside it as JSON (docs/adr/0052-figures-that-fit-the-bench.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kernbench.analyze.rates import GB, TFLOP, rate_bounds
from kernbench.errors import UserError
from kernbench.render import panels, series, style
from kernbench.render.generic_draw import draw
from kernbench.results.model import CellResult, Results
from kernbench.spec.model_metrics import rate_name
from kernbench.spec.models import Ceiling, HardwareProfile
from kernbench.units import count_rate_unit, prefixed, si_prefix, time_unit

# A renderer module offers figure_data and draw (kernbench.render); draw lives beside.
__all__ = ["FIGURE_DATA", "draw", "figure_data"]

# The lines a figure draws across its plot (a dtype's peak rate), given the scale and unit
# its values are shown in.
Ceilings = Callable[[float, str], list[dict[str, Any]]]
# The rate metrics the results store, in their stored unit, and what a second of it is.
# Values measured closer than this share of a linear axis's span: their tick labels collide.
CROWDED_TICKS = 0.1
RATES = {"flops": ("tflops", TFLOP, "FLOP/s"), "bytes": ("gbs", GB, "B/s")}


def figure_data(results: Results, name: str) -> dict[str, Any]:
    """The series one generic figure plots, as JSON-able data."""
    if name not in FIGURE_DATA:
        raise UserError(f"unknown generic figure {name!r}; known: {', '.join(FIGURE_DATA)}")
    data = FIGURE_DATA[name](results)
    panels.share_value_axis(data)
    return data


def time_data(results: Results) -> dict[str, Any]:
    return _data(results, "time", "time per call", _time, "s")


def throughput_data(results: Results) -> dict[str, Any]:
    """The flops rate, else the bytes rate, else the rate of the first count the bench
    lists under `rates:` (ADR 0075)."""
    declared = results.spec.get("metrics") or {}
    flops = "flops" in declared
    counts = results.spec.get("rates") or []
    if flops or "bytes" in declared or not counts:
        stored, per_unit, unit = RATES["flops" if flops else "bytes"]
    else:
        stored, per_unit, unit = rate_name(counts[0]), 1.0, count_rate_unit(counts[0])
    peaks = _peak_ceilings(results) if flops else None
    data = _data(results, "throughput", "throughput", _rate(stored, per_unit), unit, peaks)
    _log_under(data, [ceiling["value"] for ceiling in data.get("ceilings", [])])
    return data


def bandwidth_data(results: Results) -> dict[str, Any]:
    # Always GB/s, the unit of the ceiling it is drawn against.
    data = _data(results, "bandwidth", "achieved memory bandwidth", _rate("gbs", 1.0), "GB/s")
    ceiling = data["ceiling"] = style.profile_ceiling(
        results.hardware_profile(), "device memory bandwidth",
        lambda profile: profile.memory_gbs)
    if ceiling is not None:
        _log_under(data, [ceiling["value"]])
    return data


def _log_under(data: dict[str, Any], ceilings: list[float]) -> None:
    """A log value axis where the ceilings lie far above the data: they share the axis, and
    on a linear one they would flatten every line onto zero (a top-k at 0.1 GB/s under
    4253 GB/s)."""
    if not ceilings:
        return
    values = [p["value"] for s in data["series"] for p in s["points"] if p["value"]]
    data["log_y"] = style.log_scale_fits([*values, *ceilings]) if values else False


def _peak_ceilings(results: Results) -> Ceilings:
    """The hardware profile's peak rate of each dtype the figure shows, in its unit."""
    profile = results.hardware_profile()

    def peaks(scale: float, unit: str) -> list[dict[str, Any]]:
        shown = dict.fromkeys(str(cell.params["dtype"]) for cell in results.cells
                              if cell.metrics.get("tflops") and "dtype" in cell.params)
        found = []
        for dtype in shown:
            ceiling = style.profile_ceiling(profile, f"{dtype} peak", _peak_of(dtype))
            if ceiling is not None:
                value = style.significant(ceiling["value"] * TFLOP / scale)
                found.append({**ceiling, "value": value, "unit": unit, "dtype": dtype})
        return found

    return peaks


def _peak_of(dtype: str) -> Callable[[HardwareProfile], Ceiling | None]:
    return lambda profile: profile.peak_tflops.get(dtype)


def _data(results: Results, name: str, what: str, value: series.Value, unit: str,
          ceilings: Ceilings | None = None) -> dict[str, Any]:
    """The figure's data; `ceilings`, given the scale and unit the values are shown in,
    the lines drawn across it (its `ceilings`)."""
    arranged = series.arrange(results.cells, value)
    axis = arranged["x_axis"]
    points = [p for s in arranged["series"] for p in s["points"]]
    values = [p["value"] for p in points if p["value"] is not None]
    scale, shown_unit = (1.0, unit) if unit == "GB/s" else _unit(values, unit)
    for point in points:
        for key in ("value", "low", "high"):
            if point.get(key) is not None:
                point[key] = style.significant(point[key] / scale)
    data: dict[str, Any] = {
        "figure": name,
        "bench": results.bench,
        "device_name": style.device_name(results),
        "title": style.title(results, f"{what} vs {axis}" if axis else f"{what} per cell"),
        "footnote": style.footnote(results),
        "y_label": f"{what} ({shown_unit})",
        "x_label": axis or "cell",
        **arranged,
        "log_x": axis is not None and _log_x([p["x"] for p in points]),
        "log_y": style.log_scale_fits(values),
        "not_plotted": style.not_plotted(c for c in results.cells if c.status != "ok"),
    }
    split = panels.split(results.cells, arranged["series"]) if axis else None
    if split is not None:
        data.update(split)
    if not values:
        data["note"] = _empty_note(results, what)
    elif ceilings is not None:
        data["ceilings"] = ceilings(scale, shown_unit)
    return data


def _log_x(xs: list[Any]) -> bool:
    """A log x axis where the values span more than style.LOG_SCALE_RANGE, or where it
    spaces crowded values apart: on a linear axis two lie closer than CROWDED_TICKS of the
    span (their tick labels collide), and on a log axis further (a doubling series)."""
    if style.log_scale_fits(xs):
        return True
    values = sorted(set(xs))
    if len(values) < 3 or not all(series.is_number(x) and x > 0 for x in values):
        return False
    linear, log = (_closest_share(values, scale) for scale in (float, math.log))
    return linear < CROWDED_TICKS < log


def _closest_share(values: list[float], scale: Callable[[float], float]) -> float:
    """The closest two values' gap, as a share of the span, on an axis of that scale."""
    points = [scale(value) for value in values]
    gaps = [b - a for a, b in zip(points, points[1:], strict=False)]
    return min(gaps) / (points[-1] - points[0])


def _time(cell: CellResult) -> dict[str, Any]:
    summary = cell.summary if cell.status == "ok" else None
    if summary is None:
        return {"value": None, "low": None, "high": None}
    if not summary.median_s > 0:  # no time to draw; the cell is flagged `unresolved`
        return {"value": None, "low": None, "high": None, "reason": "median at or below 0"}
    # An interval reaching below zero (a sample less a flush estimate can) is drawn down to
    # zero: no call takes less; the cell is flagged `unresolved`.
    return {"value": summary.median_s, "low": max(0.0, summary.ci_low_s),
            "high": summary.ci_high_s}


def _rate(stored: str, per_unit: float) -> series.Value:
    """A rate metric in its base unit, with the interval the time's interval maps to."""

    def value(cell: CellResult) -> dict[str, Any]:
        rate = cell.metrics.get(stored) if cell.status == "ok" else None
        if rate is None:
            point: dict[str, Any] = {"value": None, "low": None, "high": None}
            if cell.status == "ok":
                point["reason"] = f"no {stored} metric"
            return point
        rate *= per_unit
        point = {"value": rate, "low": None, "high": None}
        summary = cell.summary
        bounds = summary and rate_bounds(rate, summary.median_s, summary.ci_low_s,
                                         summary.ci_high_s)
        if bounds:
            point["low"], point["high"] = bounds
        return point

    return value


def _unit(values: list[float], unit: str) -> tuple[float, str]:
    """The scale and unit that show the largest value with one to three integer digits."""
    largest = max(values, default=0.0)
    if unit == "s":
        return time_unit(largest)
    scale, prefix = si_prefix(largest)
    return scale, prefixed(prefix, unit)


def _empty_note(results: Results, what: str) -> str:
    return style.nothing_measured(results) or f"No cell has a {what} to plot."


FIGURE_DATA: dict[str, Callable[[Results], dict[str, Any]]] = {
    "time": time_data,
    "throughput": throughput_data,
    "bandwidth": bandwidth_data,
}
