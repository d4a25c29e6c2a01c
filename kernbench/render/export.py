"""Flat exports of a results file: a row per cell and round, for pandas and CI trackers.

`csv` and `json` hold the same rows: the cell's parameters as columns, the round's median
time and the metrics recomputed at that time (so a round's TFLOP/s is its own, not the
cell's), the status, and provenance columns. `bench` is the list of
`{name, unit, value, range, extra}` that CI benchmark trackers read: one entry per cell,
its median time (smaller is better) or a metric, the direction in its `extra`. A cell whose median
its samples do not resolve (`unresolved`) says so in its `unresolved` column, and in its
`extra` for a tracker; the report's other flags are columns too (`unsteady`, the cell's;
`throttled_fraction`, the round's share of throttled NVML readings), so that a table
filtered in pandas agrees with the report it came with.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernbench.analyze.metrics import cell_metrics
from kernbench.analyze.rates import RATE_METRICS, rate_bounds
from kernbench.analyze.stats import UNRESOLVED_RULE
from kernbench.errors import UserError, invalid_file
from kernbench.results import atomic
from kernbench.results.jsonio import json_text
from kernbench.results.model import CellResult, Results, RoundResult
from kernbench.results.provenance import recorded_git
from kernbench.spec.cell_keys import as_text
from kernbench.spec.model_metrics import rate_name
from kernbench.spec.models import Bench
from kernbench.units import METRIC_UNITS, count_rate_unit, counted

FORMATS = ("csv", "json", "bench")
TIMES = ("time_s", "model_time_s")  # smaller is better
FIRST_COLUMNS = ("bench", "cell", "variant", "round", "status", "reason", "time_s", "samples")


def rows(results: Results, source: object = "results") -> list[dict[str, Any]]:
    """One row per cell and measured round (a cell with no rounds: one row, round empty).
    `source`: the file the results came from, for the line that refuses their bench."""
    try:  # each round's metrics are computed again from the bench the results record
        bench = Bench.model_validate(results.spec)
    except ValidationError as exc:
        raise invalid_file(source, exc, within="spec") from None
    profile = results.hardware_profile()
    context = _provenance_columns(results)
    out = []
    for cell in results.cells:
        rounds: list[RoundResult | None] = list(cell.rounds) or [None]
        for measured in rounds:
            row: dict[str, Any] = {
                "bench": results.bench, "cell": cell.id, "variant": cell.variant,
                "round": measured.round if measured else None,
                "status": measured.status if measured else cell.status,
                "reason": (measured.reason if measured else None) or cell.reason,
                "time_s": measured.median_s if measured else None,
                "samples": len(measured.samples_s) if measured else 0,
                "timer": measured.timer if measured else None,  # auto's pick, per round
                "unresolved": cell.unresolved,  # the cell's median, not this round's
                "unsteady": cell.unsteady,  # the cell's rounds, as the report flags it
                "throttled_fraction": _throttled(measured),
            }
            if measured is not None and measured.median_s:
                metrics, _ = cell_metrics(bench, cell.params, measured.median_s, profile)
                row.update(metrics)
            row.update(context)
            row.update(_params(cell, row, source))
            out.append({k: without_float_noise(v) for k, v in row.items()})
    return out


def to_csv(results: Results, source: object = "results") -> str:
    table = rows(results, source)
    columns = list(FIRST_COLUMNS) + sorted({k for r in table for k in r} - set(FIRST_COLUMNS))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    # A boolean as YAML and --only write it (`inplace=false`), not as Python prints it.
    writer.writerows({k: as_text(v) if isinstance(v, bool) else v for k, v in row.items()}
                     for row in table)
    return buffer.getvalue()


def to_json(results: Results, source: object = "results") -> str:
    return json_text(rows(results, source))


def to_bench(results: Results, metric: str | None = None) -> str:
    """CI trackers' list: each ok cell's median time (s, smaller is better), or `metric`.

    `range` is the median's CI as ± its half-width, for a time and for a rate alike (a
    rate is a count over the median: its interval is the time's, inverted); a metric that
    does not depend on the time (`flops`, `model_time_s`) has none. `extra` says which way
    is better, since a tracker cannot tell a time from a rate by its name."""
    entries = []
    rates = _rates_of_time(results)
    for cell in _ok(results.cells):
        summary = cell.summary
        assert summary is not None
        name = metric or "time_s"
        if name not in cell.metrics and name != "time_s":
            known = ", ".join(sorted(cell.metrics)) or "none"
            raise UserError(f"--metric: {cell.id} has no metric {name!r}; it has {known}")
        value = summary.median_s if metric is None else cell.metrics[name]
        spread = ""
        if name == "time_s":
            spread = f"±{(summary.ci_high_s - summary.ci_low_s) / 2:.3g}"
        elif name in rates and (bounds := rate_bounds(
                value, summary.median_s, summary.ci_low_s, summary.ci_high_s)):
            spread = f"±{(bounds[1] - bounds[0]) / 2:.3g}"
        better = "smaller" if name in TIMES else "bigger" if name in rates else None
        extra = counted(summary.n, "sample") + (f"; {better} is better" if better else "")
        if cell.unresolved:  # a tracker charts the value: say it is not a resolved one
            extra += f"; unresolved: {UNRESOLVED_RULE}"
        entries.append({"name": f"{results.bench}/{cell.id}", "unit": _unit(results, name),
                        "value": without_float_noise(value), "range": spread, "extra": extra})
    return json.dumps(entries, indent=1) + "\n"


def _rates_of_time(results: Results) -> set[str]:
    """The metrics that are a count over the cell's median time."""
    declared = {rate_name(count) for count in results.spec.get("rates") or []}
    return set(RATE_METRICS) | declared


def without_float_noise(value: Any) -> Any:
    """A float at 12 significant digits: 0.1 + 0.2 is written 0.3, not 0.30000000000000004
    (a sum's last bits are not part of any measurement)."""
    return float(f"{value:.12g}") if isinstance(value, float) else value


def _unit(results: Results, metric: str) -> str:
    """The metric's unit for a tracker's axis: `TFLOP/s`, not `tflops`."""
    if metric in METRIC_UNITS:
        return METRIC_UNITS[metric]
    rated = {rate_name(count): count for count in results.spec.get("rates") or []}
    return count_rate_unit(rated[metric]) if metric in rated else metric


def export(
    results: Results, fmt: str, metric: str | None = None, source: object = "results"
) -> str:
    if fmt not in FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if metric is not None:
        _check_metric(results, fmt, metric)
    if fmt == "csv":
        return to_csv(results, source)
    if fmt == "json":
        return to_json(results, source)
    return to_bench(results, metric)


def _check_metric(results: Results, fmt: str, metric: str) -> None:
    """A metric some cell has, and a format that reads --metric (csv and json hold them all)."""
    known = sorted({name for cell in _ok(results.cells) for name in cell.metrics})
    if metric not in known:
        raise UserError(f"--metric: no cell has a metric {metric!r}; the metrics are "
                        f"{', '.join(known) or 'none'}")
    if fmt != "bench":
        raise UserError(f"--metric: only --format bench reads it; {fmt} has a column for "
                        "each metric")


def write_csv(results: Results, folder: Path) -> list[Path]:
    """The run writer: results.csv beside results.json."""
    path = Path(folder) / "results.csv"
    atomic.write_text(path, to_csv(results))
    return [path]


def _throttled(measured: RoundResult | None) -> float | None:
    """The share of the round's NVML readings that reported a slowdown; empty where none
    was read (a CPU, no pynvml)."""
    if measured is None or not measured.throttled:
        return None
    return sum(measured.throttled) / len(measured.throttled)


def _ok(cells: Iterable[CellResult]) -> list[CellResult]:
    return [cell for cell in cells if cell.status == "ok" and cell.summary is not None]


def _params(cell: CellResult, computed: dict[str, Any], source: object) -> dict[str, Any]:
    """The cell's parameters as columns. One named as a column export computes (`status`,
    `timer`, a metric, ...) is refused where the two differ: either would hide the other.
    Where they agree (a cell's `device` parameter and the run's device) one column holds
    both."""
    params = _flat(cell.params)
    clash = sorted(k for k, v in params.items() if k in computed and computed[k] != v)
    if clash:
        raise UserError(f"{source}: cell {cell.id}: parameter {clash[0]!r} has the name of a "
                        "column export computes; rename the parameter in the bench")
    return params


def _flat(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as columns: nested values (rare) as compact JSON."""
    return {k: v if isinstance(v, str | int | float | bool) or v is None else json.dumps(v)
            for k, v in params.items()}


def _provenance_columns(results: Results) -> dict[str, Any]:
    prov = results.provenance
    git = recorded_git(prov)
    return {
        "device": results.device,
        "device_name": prov.get("device_name"),
        "driver": prov.get("driver"),
        "torch": prov.get("torch"),
        "kernbench": prov.get("kernbench"),
        "commit": git.get("commit"),
        "created_utc": results.created_utc,
    }
