"""The report's opening answer: per variant, the best throughput it reached and how close
that came to the hardware profile's ceiling for it.

A table of 180 cells does not say it; a reader deciding between variants looks for it
first. One throughput per bench, the one its model is judged by: a collective's busbw
against the interconnect; a GEMM's TFLOP/s against its roofline (the peak of the cell's
dtype, or the memory or host copies that hold it); else GB/s against the memory bandwidth.
The ceilings are those `util` and the figures use (measured where calibrated, else the
datasheet), named with their source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernbench.render.legend import cell_flags
from kernbench.results.model import CellResult, Results
from kernbench.spec.hardware import ceiling_source
from kernbench.spec.models import HardwareProfile

# Which throughput leads, in this order of preference, with its heading (`_ceiling` says
# what each is measured against).
LEADING = (("busbw_gbs", "busbw GB/s"), ("tflops", "TFLOP/s"), ("gbs", "GB/s"))
# The share column's heading: what the best rate is divided by. A GEMM's roofline is its
# dtype's peak where compute holds it, and there the share equals the table's `% of dtype
# peak` (both are `util`, one over the roofline's own `model_util`).
DIVIDES_BY = {"busbw_gbs": "of the interconnect", "tflops": "of its roofline",
              "gbs": "of the memory bandwidth"}


def headline(results: Results) -> dict[str, Any] | None:
    """{heading, by_dtype, rows: [{variant, dtype, ok, best, cell, of_ceiling, flags}]};
    None when no cell has a throughput (a bench of times alone).

    A row is a variant's highest throughput, and that cell's share of its own ceiling; a
    bench of several dtypes gets a row per variant and dtype: an fp32 GEMM at 95% of its
    peak and a bf16 one at 90% are not one ranking, and a reader comparing variants
    compares like dtypes. A cell whose ceiling the profile lacks is still a candidate."""
    ok = [c for c in results.cells if c.status == "ok"]
    present = {name for c in ok for name in c.metrics}
    chosen = next((lead for lead in LEADING if lead[0] in present), None)
    if chosen is None:
        return None
    metric, heading = chosen
    profile = results.hardware_profile()
    measured = [c for c in ok if metric in c.metrics]
    by_dtype = len({_dtype(c) for c in measured}) > 1
    groups: dict[tuple[str, str], list[CellResult]] = {}
    for cell in measured:
        groups.setdefault((cell.variant, _dtype(cell) if by_dtype else ""), []).append(cell)
    rows = [_row(variant, dtype, cells, metric, profile)
            for (variant, dtype), cells in groups.items()]
    return {"heading": heading, "by_dtype": by_dtype, "rows": rows,
            "divides_by": DIVIDES_BY[metric]}


def _dtype(cell: CellResult) -> str:
    return str(cell.params.get("dtype", ""))


def _row(variant: str, dtype: str, cells: Sequence[CellResult], metric: str,
         profile: HardwareProfile | None) -> dict[str, str]:
    best = max(cells, key=lambda c: c.metrics[metric])
    rated = _ceiling(best, metric, profile)
    of_ceiling = ""
    if rated:
        ceiling, source = rated
        of_ceiling = f"{100 * best.metrics[metric] / ceiling:.0f}% of {ceiling:.4g} ({source})"
    return {"variant": variant, "dtype": dtype, "ok": str(len(cells)),
            "best": f"{best.metrics[metric]:.4g}",
            "cell": best.id.split("/", 1)[-1], "of_ceiling": of_ceiling,
            # a headline resting on an unsteady or throttled cell says so where it is read
            "flags": ", ".join(cell_flags(best))}


def _ceiling(cell: CellResult, metric: str,
             profile: HardwareProfile | None) -> tuple[float, str] | None:
    """The rate the cell could reach, in the metric's unit, and what it is. A GEMM's is its
    roofline's (the cell's flops over the model's time): a staged cell is held by its host
    copies, not by the peak, and a small one by memory."""
    if profile is None:
        return None
    if metric == "tflops":
        peak = profile.peak_tflops.get(str(cell.params.get("dtype", "")))
        util, model_util = cell.metrics.get("util"), cell.metrics.get("model_util")
        if peak is None or not util or not model_util:
            return None
        # The roofline's rate is model_util of the peak: the share is util / model_util,
        # the same `util` the tables show as `% of dtype peak`.
        return cell.metrics[metric] * model_util / util, (
            f"the roofline, {ceiling_source(profile, peak)} ceilings")
    ceiling = profile.interconnect_gbs if metric == "busbw_gbs" else profile.memory_gbs
    if ceiling is None:
        return None
    name = "interconnect" if metric == "busbw_gbs" else "memory bandwidth"
    return ceiling.value, f"{ceiling_source(profile, ceiling)} {name}"
