"""Results of fake side runs: a cell per (variant, size), samples around a chosen median."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kernbench.ab.failures import RunOutcome
from kernbench.ab.schedule import AbManifest, schedule
from kernbench.results.model import CellResult, Results, RoundResult

VARIANTS = ("fast", "slow")
SIZES = (100, 400)

# (run name, variant, size) -> median seconds of that cell in that run, or None: failed.
MedianOf = Callable[[str, str, int], "float | None"]


def manifest(rounds: int = 6, aa: bool = False, min_effect: float = 1.0) -> AbManifest:
    return AbManifest(
        bench="fake",
        bench_path="fake.yaml",
        device="cpu",
        switch="KB_X",
        a="0",
        b="1",
        rounds=rounds,
        aa=aa,
        min_effect=min_effect,
        variants=list(VARIANTS),
        created_utc="2026-01-01T00:00:00Z",
        runs=schedule(rounds, "0", "1", aa),
    )


def samples_around(median: float, spread: float = 0.01) -> list[float]:
    """Nine samples whose median is `median` and relative IQR is about `spread`."""
    steps = (-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2)
    return [median * (1 + spread * step) for step in steps]


def results(
    run: str, round: int, median_of: MedianOf, variants: Sequence[str] = VARIANTS,
    timer: str = "", provenance: dict[str, Any] | None = None,
) -> Results:
    cells = []
    for variant in variants:
        for size in SIZES:
            median = median_of(run, variant, size)
            index = len(cells)
            if median is None:
                rounds = [RoundResult(round=round, status="failed", reason="RuntimeError: boom")]
                status, reason = "failed", "RuntimeError: boom"
            else:
                rounds = [
                    RoundResult(
                        round=round,
                        status="ok",
                        samples_s=samples_around(median),
                        median_s=median,
                        timer=timer,
                    )
                ]
                status, reason = "ok", None
            cells.append(
                CellResult(
                    id=f"{variant}/size={size}",
                    index=index,
                    variant=variant,
                    axes={"size": size},
                    params={"size": size, "device": "cpu"},
                    status=status,
                    reason=reason,
                    rounds=rounds,
                )
            )
    return Results(
        bench="fake",
        spec_hash="0",
        spec={},
        created_utc="2026-01-01T00:00:00Z",
        device="cpu",
        rounds=1,
        first_round=round,
        provenance=provenance or {},
        cells=cells,
    )


def outcomes(
    plan: AbManifest, median_of: MedianOf,
    provenance: Callable[[str], dict[str, Any]] | None = None,
) -> dict[str, RunOutcome]:
    """`provenance`: each run's, by its name (none by default)."""
    return {run.name: RunOutcome(results(run.name, run.round, median_of,
                                         provenance=provenance(run.name) if provenance else None))
            for run in plan.runs}
