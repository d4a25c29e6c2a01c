"""GEMM figures: throughput, MAC utilization, roofline vs measured, stage breakdown.

Each figure is made in two steps: `figure_data` turns the results into the plain
data a figure shows (written beside the PNG as JSON, the golden output CI compares), and
`gemm_draw.draw` draws exactly that data. Metrics come from the results as recorded;
the renderer only converts units (see docs/adr/0050-figures-from-results.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernbench.analyze.rates import rate_bounds
from kernbench.errors import UserError
from kernbench.render import style
from kernbench.render.gemm_draw import draw
from kernbench.results.model import CellResult, Results
from kernbench.spec.models import HardwareProfile

# A renderer module offers figure_data and draw (kernbench.render); draw lives beside.
__all__ = ["FIGURE_DATA", "draw", "figure_data", "shape_label"]

NO_DTYPE = "-"


@dataclass
class _Table:
    """The cells of a run arranged as the figures show them: dtype -> shape -> variant."""

    variants: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    shapes: dict[str, list[str]] = field(default_factory=dict)
    cells: dict[tuple[str, str, str], CellResult] = field(default_factory=dict)




def figure_data(results: Results, name: str) -> dict[str, Any]:
    """The series one GEMM figure plots, as JSON-able data (None where nothing is drawn)."""
    if name not in FIGURE_DATA:
        raise UserError(f"unknown GEMM figure {name!r}; known: {', '.join(FIGURE_DATA)}")
    return FIGURE_DATA[name](results)


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
        "device_name": style.device_name(results),
        "title": style.title(results, what),
        "footnote": style.footnote(results),
        "variants": table.variants,
        "panels": [],
        "not_plotted": [],
    }


def _peak(profile: HardwareProfile | None, dtype: str) -> tuple[float | None, str | None]:
    """The dtype's peak TFLOP/s the metrics used, and where it comes from. Not rounded as
    `style.profile_ceiling` rounds: the gemm figures' data has always held the profile's
    value whole (tests/golden), and a rounded peak would change every committed copy."""
    found = style.ceiling_of(profile, lambda profile: profile.peak_tflops.get(dtype))
    return found if found is not None else (None, None)


def _bar(cell: CellResult, shape: str, metric: str, scale: float) -> dict[str, Any]:
    """One slot of a bar panel: the metric (times scale) and its CI, or why it is empty."""
    entry: dict[str, Any] = {
        "shape": shape,
        "variant": cell.variant,
        "status": cell.status,
        "under_tile": cell.under_tile,
        "value": None,
    }
    if cell.unsteady:  # only when set: figure data of older results stays as it was
        entry["unsteady"] = True
    if cell.status != "ok":
        entry["reason"] = cell.reason
        return entry
    value = cell.metrics.get(metric)
    if value is None:
        entry["reason"] = f"no {metric} metric"
        return entry
    entry["value"] = style.significant(value * scale)
    summary = cell.summary
    bounds = summary and rate_bounds(value * scale, summary.median_s, summary.ci_low_s,
                                     summary.ci_high_s)
    if bounds:
        entry["low"], entry["high"] = (style.significant(b) for b in bounds)
    return entry


def _bar_data(
    results: Results, name: str, what: str, metric: str, scale: float, unit: str
) -> dict[str, Any]:
    table = _table(results.cells)
    data = _header(results, name, what, table)
    data["unit"] = unit
    data["metric"] = metric
    data["not_plotted"] = style.not_plotted(c for c in results.cells if c.status != "ok")
    profile = results.hardware_profile()
    for dtype in table.dtypes:
        bars = [
            _bar(table.cells[(dtype, shape, variant)], shape, metric, scale)
            for shape in table.shapes[dtype]
            for variant in table.variants
            if (dtype, shape, variant) in table.cells
        ]
        peak, source = _peak(profile, dtype)
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
    data["log_y"] = style.log_scale_fits(values)
    return data


def _empty_note(results: Results, metric: str) -> str:
    if nothing := style.nothing_measured(results):
        return nothing
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
    data["not_plotted"] = style.not_plotted(c for c in cells if c.status != "ok")
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
    if cell.unsteady:  # as in _bar: a staged cell's rounds disagree most often of all
        entry["unsteady"] = True
    if cell.status != "ok":
        entry["reason"] = cell.reason
    elif not cell.stages_s:
        entry["reason"] = "no stage times"
    return entry


FIGURE_DATA: dict[str, Callable[[Results], dict[str, Any]]] = {
    "throughput": throughput_data,
    "utilization": utilization_data,
    "theory_vs_measured": theory_vs_measured_data,
    "stage_breakdown": stage_breakdown_data,
}
