"""Metrics of a measured cell: throughput, utilization and the roofline's time.

Every model constant comes from the hardware profile. `util` is measured against the
ceiling the profile uses (measured where calibrated); a cell faster than the roofline
allows at the *datasheet* peak is physically impossible, so it is marked invalid: it
means a warm cache or a broken timer, not a fast kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.analyze.collective import BUSBW_FACTOR, bandwidths
from kernbench.spec import expr
from kernbench.spec.models import Bench, HardwareProfile, derived_names

# Measured time may undercut the datasheet roofline by this much before we call it invalid
# (clock boost and rounding in datasheet figures).
INVALID_MARGIN = 0.03


def expression_metrics(bench: Bench, params: Mapping[str, Any]) -> dict[str, float]:
    namespace = derived_names(dict(params))
    values: dict[str, float] = {}
    for name, text in bench.metrics.items():
        try:
            values[name] = float(expr.parse(text).evaluate(namespace))
        except expr.ExpressionError:
            continue  # a name this cell lacks (e.g. a variant-only option)
    return values


def cell_metrics(
    bench: Bench,
    params: Mapping[str, Any],
    median_s: float,
    profile: HardwareProfile | None,
) -> tuple[dict[str, float], str | None]:
    """The metrics of one cell, and a reason when the result is physically impossible."""
    metrics = expression_metrics(bench, params)
    metrics["time_s"] = median_s
    flops, moved = metrics.get("flops"), metrics.get("bytes")
    if flops:
        metrics["tflops"] = flops / median_s / 1e12
    if moved:
        metrics["gbs"] = moved / median_s / 1e9
    if flops and moved:
        metrics["intensity"] = flops / moved
    if moved and params.get("op") in _collective_ops():
        metrics.update(
            bandwidths(str(params["op"]), moved, int(params.get("world_size", 1)), median_s)
        )
    if profile is None or bench.model != "roofline" or not flops:
        return metrics, None
    dtype = str(params.get("dtype", ""))
    peak = profile.peak(dtype)
    if peak is None:
        return metrics, None
    metrics["util"] = metrics["tflops"] / peak
    staged = params.get("staging") == "staged"
    model_time = roofline_time(profile, dtype, flops, moved or 0.0, staged, use_datasheet=False)
    if model_time is None:
        return metrics, None
    metrics["model_time_s"] = model_time
    metrics["model_util"] = flops / (peak * 1e12) / model_time
    floor = roofline_time(profile, dtype, flops, moved or 0.0, staged, use_datasheet=True)
    if floor and median_s < floor * (1 - INVALID_MARGIN):
        return metrics, (
            f"faster than the roofline allows at datasheet peaks ({median_s:.3g} s < "
            f"{floor:.3g} s): a warm cache or a broken timer"
        )
    return metrics, None


def _collective_ops() -> set[str]:
    """Cells with a collective `op` parameter (built-in kernel or not) get algbw/busbw."""
    return set(BUSBW_FACTOR)


def roofline_time(
    profile: HardwareProfile,
    dtype: str,
    flops: float,
    moved: float,
    staged: bool,
    use_datasheet: bool,
) -> float | None:
    """t = max(flops / peak, bytes / memory bandwidth), plus the host link when staged.

    With `use_datasheet`, only datasheet figures count (the hardware's hard limits);
    returns None when the profile has none.
    """

    def rate(ceiling: Any) -> float | None:
        if ceiling is None:
            return None
        return ceiling.datasheet if use_datasheet else ceiling.value

    peak = rate(profile.peak_tflops.get(dtype))
    bandwidth = rate(profile.memory_gbs)
    if peak is None or bandwidth is None:
        return None
    seconds = max(flops / (peak * 1e12), moved / (bandwidth * 1e9))
    if staged:
        # On a CPU "staging" copies memory to memory: the link is the memory itself.
        link = rate(profile.host_to_device_gbs or (profile.memory_gbs if profile.kind == "cpu"
                                                   else None))
        if link is None:
            return None
        seconds += moved / (link * 1e9)
    return seconds
