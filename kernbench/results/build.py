"""Build the results file from a run's journal: statistics, metrics, status per cell."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from kernbench.analyze import stats
from kernbench.analyze.metrics import cell_metrics
from kernbench.plan import Cell
from kernbench.results.model import (
    CellResult,
    Results,
    RoundResult,
    Selection,
    Summary,
    Topology,
    collective_fits,
)
from kernbench.results.provenance import portable_path
from kernbench.spec.models import Bench, HardwareProfile
from kernbench.timing.steady import is_unsteady, round_spread
from kernbench.units import counted


def cell_result(
    bench: Bench,
    cell: Cell,
    rounds: list[RoundResult],
    expected_rounds: int,
    profile: HardwareProfile | None,
) -> CellResult:
    result = CellResult(
        id=cell.id,
        index=cell.index,
        variant=cell.variant,
        axes=dict(cell.axes),
        params=dict(cell.params),
        status="pending",
        rounds=rounds,
    )
    failed = [r for r in rounds if r.status != "ok"]
    if failed:
        result.status = "failed"
        result.reason = f"round {failed[0].round}: {failed[0].reason}"
        return result
    if len(rounds) < expected_rounds:
        result.reason = f"{len(rounds)} of {counted(expected_rounds, 'round')} measured"
        return result
    samples = [s for r in rounds for s in r.samples_s]
    if not samples:
        result.status, result.reason = "failed", "no samples"
        return result
    summary = stats.summarize(samples)
    result.summary = Summary(
        n=summary.n,
        median_s=summary.median,
        mean_s=summary.mean,
        min_s=summary.min,
        max_s=summary.max,
        q1_s=summary.q1,
        q3_s=summary.q3,
        iqr_s=summary.iqr,
        rel_iqr=summary.rel_iqr,
        ci_low_s=summary.ci_low,
        ci_high_s=summary.ci_high,
        ci_coverage=summary.ci_coverage,
        round_medians_s=[r.median_s for r in rounds if r.median_s is not None],
    )
    result.round_spread = round_spread(result.summary.round_medians_s)
    result.unsteady = is_unsteady(result.round_spread, bench.timer.steady_tol)
    result.unresolved = stats.unresolved(summary.median, summary.ci_low, summary.ci_high)
    stages: dict[str, list[float]] = {}
    for round_result in rounds:
        for name, values in round_result.stages_s.items():
            stages.setdefault(name, []).extend(values)
    result.stages_s = {name: statistics.median(values) for name, values in stages.items() if values}
    flags = [flag for r in rounds for flag in r.throttled]
    if flags:
        result.throttled_fraction = sum(flags) / len(flags)
    problems = []
    tile = rounds[0].extra.get("tile")
    if tile:
        result.tile = as_tile(tile)
        if result.tile is None:
            problems.append(f"tile: {tile!r} is not a list of integers")
        else:
            result.under_tile = _under_tile(cell.params, result.tile)
    result.metrics, invalid, broken = _metrics(bench, cell.params, summary.median, profile)
    problems += broken
    result.status = "invalid" if invalid else "ok"
    result.reason = invalid
    if problems:
        return not_summarized(result, "; ".join(problems))
    return result


def not_summarized(cell: CellResult, why: str) -> CellResult:
    """A measured cell that could not be made into results (a metric that raises, a
    missing hardware profile): failed with why, its rounds and summary kept, so that
    `kernbench collect` can rebuild it once the bench is fixed."""
    if cell.status not in ("ok", "invalid"):
        return cell
    return cell.model_copy(update={"status": "failed", "reason": f"measured, but {why}"})


def as_tile(value: Any) -> list[int] | None:
    """A kernel's tile as integers, or None when it is not a list of them."""
    if not isinstance(value, list | tuple):
        return None
    try:
        tile = [int(t) for t in value]
    except (TypeError, ValueError, OverflowError):
        return None
    return tile if all(t == v for t, v in zip(tile, value, strict=True)) else None


def _metrics(
    bench: Bench, params: Any, median_s: float, profile: HardwareProfile | None
) -> tuple[dict[str, float], str | None, list[str]]:
    """`cell_metrics`, or, when it raises, the metrics that do not, and why the others
    failed. Any exception: the expressions are the user's, evaluated on measured data."""
    try:
        metrics, invalid = cell_metrics(bench, params, median_s, profile)
        return metrics, invalid, []
    except Exception as exc:  # noqa: BLE001 - a bad metric must not lose the samples
        whole = describe(exc)
    broken: dict[str, str] = {}
    for name, text in bench.metrics.items():
        alone = bench.model_copy(update={"metrics": {name: text}})
        try:
            cell_metrics(alone, params, median_s, None)
        except Exception as exc:  # noqa: BLE001
            broken[name] = describe(exc)
    kept = bench.model_copy(
        update={"metrics": {n: t for n, t in bench.metrics.items() if n not in broken}}
    )
    try:
        metrics, invalid = cell_metrics(kept, params, median_s, profile)
    except Exception as exc:  # noqa: BLE001 - the model's own step, past the expressions
        metrics, invalid = {"time_s": median_s}, None
        broken["(model)"] = describe(exc)
    if not broken:
        broken["(metrics)"] = whole
    return metrics, invalid, [f"metric {name}: {why}" for name, why in broken.items()]


def describe(exc: BaseException) -> str:
    """An exception as one short line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def _under_tile(params: Any, tile: list[int]) -> bool:
    dims = [params.get(name) for name in ("M", "N", "K")][: len(tile)]
    return any(isinstance(d, int) and d < t for d, t in zip(dims, tile, strict=False) if t)


def build_results(
    bench: Bench,
    bench_path: Path,
    manifest: dict[str, Any],
    cells: list[CellResult],
    pins: dict[str, Any],
    stale: list[str],
    provenance: dict[str, Any],
    profile: HardwareProfile | None,
    complete: bool,
    finished_utc: str | None,
    topology: Topology | None = None,
) -> Results:
    return Results(
        bench=bench.name,
        description=bench.description,
        spec_hash=manifest["spec_hash"],
        spec=bench.model_dump(mode="json"),
        created_utc=manifest["created_utc"],
        finished_utc=finished_utc,
        complete=complete,
        device=manifest["device"],
        rounds=manifest["rounds"],
        first_round=manifest["first_round"],
        provenance={**provenance, "bench_path": portable_path(bench_path)},
        hardware=profile.model_dump(mode="json") if profile else None,
        pins=pins,
        stale_pins=stale,
        cells=cells,
        fits=collective_fits(cells),
        order_seed=manifest.get("order_seed"),
        topology=topology,
        selection=Selection(only=list(manifest.get("only", ())), cells=manifest.get("cells"),
                            shard=manifest.get("shard")),
    )

