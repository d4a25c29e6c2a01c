"""Build the results file from a run's journal: statistics, metrics, status per cell."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernbench.analyze import stats
from kernbench.analyze.metrics import cell_metrics
from kernbench.plan import Cell
from kernbench.results.model import CellResult, Fit, Results, RoundResult, Summary, fits_of
from kernbench.spec.models import Bench, HardwareProfile


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
        result.reason = f"{len(rounds)} of {expected_rounds} rounds measured"
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
    stages: dict[str, list[float]] = {}
    for round_result in rounds:
        for name, values in round_result.stages_s.items():
            stages.setdefault(name, []).extend(values)
    result.stages_s = {name: statistics.median(values) for name, values in stages.items() if values}
    flags = [flag for r in rounds for flag in r.throttled]
    if flags:
        result.throttled_fraction = sum(flags) / len(flags)
    tile = rounds[0].extra.get("tile")
    if tile:
        result.tile = [int(t) for t in tile]
        result.under_tile = _under_tile(cell.params, result.tile)
    result.metrics, invalid = cell_metrics(bench, cell.params, summary.median, profile)
    result.status = "invalid" if invalid else "ok"
    result.reason = invalid
    return result


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
        provenance={**provenance, "bench_path": str(bench_path)},
        hardware=profile.model_dump(mode="json") if profile else None,
        pins=pins,
        stale_pins=stale,
        cells=cells,
        fits=collective_fits(cells),
    )


def collective_fits(cells: Sequence[CellResult]) -> dict[str, Fit]:
    """The α-β fit of each series the collective figures draw, which render/ccl.py reads."""
    return fits_of(
        (cell.params, cell.summary.median_s)
        for cell in cells
        if cell.status == "ok" and cell.summary is not None and "op" in cell.params
    )
