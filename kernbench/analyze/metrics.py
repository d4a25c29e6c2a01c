"""Metrics of a measured cell: throughput, utilization and the roofline's time; the rate
per second of each count the bench lists under `rates:` (`elements_per_s`).

Every model constant comes from the hardware profile. `util` is measured against the
ceiling the profile uses (measured where calibrated); a cell faster than the roofline
allows at the *datasheet* peak is physically impossible, so it is marked invalid: it
means a warm cache or a broken timer, not a fast kernel.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kernbench.analyze.collective import bandwidths, names_collective
from kernbench.analyze.rates import GB, TFLOP, per_second
from kernbench.plan import Cell
from kernbench.spec import expr
from kernbench.spec.checks import world_size_of
from kernbench.spec.model_metrics import counts_of, rate_name
from kernbench.spec.models import Bench, HardwareProfile, derived_names

# Measured time may undercut the datasheet roofline by this much before we call it invalid
# (clock boost and rounding in datasheet figures).
INVALID_MARGIN = 0.03


class MetricError(ValueError):
    """A metric that cannot be computed on a cell: division by zero, a math domain error,
    a wrong argument, a result that is not a finite number. The message says why."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(why)
        self.name = name
        self.why = why


def expression_metrics(bench: Bench, params: Mapping[str, Any]) -> dict[str, float]:
    """The bench's metric expressions on one cell's parameters. A metric naming a
    parameter the cell lacks (a variant-only option) does not apply to it and is left out;
    one that cannot be computed raises `MetricError`, never a value dropped or an inf."""
    namespace = derived_names(dict(params))
    counts = counts_of(bench)
    values: dict[str, float] = {}
    for name, text in bench.metrics.items():
        expression = expr.parse(text)
        if expression.names <= namespace.keys():
            values[name] = metric_value(name, expression, namespace, counts)
    return values


def metric_value(
    name: str, expression: expr.Expression, namespace: Mapping[str, Any], counts: Collection[str]
) -> float:
    """One metric as a finite float, or `MetricError` saying why not; `counts`: the names
    of the metrics that count work (`counts_of`), which may not be negative."""
    try:
        value = float(expression.evaluate(namespace))
    except expr.ExpressionError as exc:
        raise MetricError(name, str(exc)) from None
    except OverflowError:
        raise MetricError(name, f"{expression.text!r} is too large for a float") from None
    if name in counts and value < 0:
        # A count of work per call: a negative one would be a negative rate (TFLOP/s, GB/s).
        raise MetricError(name, f"{expression.text!r} is {value:g}: {name} cannot be negative")
    return value


@dataclass(frozen=True)
class MetricProblem:
    """The first metric that cannot be computed on a cell of a plan."""

    name: str
    why: str
    cell: Cell


def first_metric_problem(bench: Bench, cells: Iterable[Cell]) -> MetricProblem | None:
    """Every metric on every cell, before anything is measured (`validate`, `plan`, `run`).

    Each expression is evaluated once per distinct value of the names it uses, so a plan
    of many cells costs about as much as its distinct shapes.
    """
    expressions = {name: expr.parse(text) for name, text in bench.metrics.items()}
    counts = counts_of(bench)
    tried: set[tuple[str, tuple[str, ...]]] = set()
    for cell in cells:
        namespace = derived_names(dict(cell.params))
        for name, expression in expressions.items():
            if not expression.names <= namespace.keys():
                continue
            key = (name, tuple(repr(namespace[n]) for n in sorted(expression.names)))
            if key in tried:
                continue
            tried.add(key)
            try:
                metric_value(name, expression, namespace, counts)
            except MetricError as exc:
                return MetricProblem(name, exc.why, cell)
    return None


def cell_metrics(
    bench: Bench,
    params: Mapping[str, Any],
    median_s: float,
    profile: HardwareProfile | None,
) -> tuple[dict[str, float], str | None]:
    """The metrics of one cell, and a reason when the result is physically impossible.

    A metric that cannot be computed raises `MetricError` (results/build.py then keeps the
    cell's samples and records why): a value is never dropped silently, nor stored as inf.
    """
    metrics, invalid = _measured_metrics(bench, params, median_s, profile)
    for name, value in metrics.items():
        if not math.isfinite(value):
            raise MetricError(name, f"{name} is {value} at a median of {median_s:.3g} s")
    return metrics, invalid


def _measured_metrics(
    bench: Bench,
    params: Mapping[str, Any],
    median_s: float,
    profile: HardwareProfile | None,
) -> tuple[dict[str, float], str | None]:
    metrics = expression_metrics(bench, params)
    rates = {rate_name(count): per_second(metrics[count], median_s)
             for count in bench.rates if count in metrics}
    metrics["time_s"] = median_s
    metrics.update(rates)
    flops, moved = metrics.get("flops"), metrics.get("bytes")
    if flops:
        metrics["tflops"] = per_second(flops, median_s, TFLOP)
    if moved:
        metrics["gbs"] = per_second(moved, median_s, GB)
    if flops and moved:
        metrics["intensity"] = flops / moved
    if moved and names_collective(params):
        metrics.update(
            bandwidths(str(params["op"]), moved, world_size_of(params), median_s)
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
    metrics["model_util"] = flops / (peak * TFLOP) / model_time
    floor = roofline_time(profile, dtype, flops, moved or 0.0, staged, use_datasheet=True)
    if floor and median_s < floor * (1 - INVALID_MARGIN):
        return metrics, (
            f"faster than the roofline allows at datasheet peaks ({median_s:.3g} s < "
            f"{floor:.3g} s): a warm cache or a broken timer"
        )
    return metrics, None


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
    seconds = max(flops / (peak * TFLOP), moved / (bandwidth * GB))
    if staged:
        # On a CPU "staging" copies memory to memory: the link is the memory itself.
        link = rate(profile.host_to_device_gbs or (profile.memory_gbs if profile.kind == "cpu"
                                                   else None))
        if link is None:
            return None
        seconds += moved / (link * GB)
    return seconds


def call_floor_s(
    bench: Bench, params: Mapping[str, Any], profile: HardwareProfile | None
) -> float:
    """The fastest a cell's call can be: its roofline time at `profile`'s rates, from the
    bench's `flops` and `bytes`; 0 where the profile has no rate for its dtype or the
    bench no such metric. The plan's estimate counts a slow cell's calls by it."""
    dtype = str(params.get("dtype", ""))
    if profile is None or profile.peak(dtype) is None:
        return 0.0
    try:
        metrics = expression_metrics(bench, params)
    except MetricError:
        return 0.0
    flops, moved = metrics.get("flops", 0.0), metrics.get("bytes", 0.0)
    if not (flops or moved):
        return 0.0
    staged = params.get("staging") == "staged"
    return roofline_time(profile, dtype, flops, moved, staged, use_datasheet=False) or 0.0
