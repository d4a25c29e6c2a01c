"""A rough wall-time estimate of a run, shown by `kernbench plan` before anything runs."""

from __future__ import annotations

from kernbench.spec import Bench

# Building inputs, the one-time check and pin replay per cell, and a worker's start-up
# (Python, torch import) per round: rough figures, not measured per machine.
CELL_OVERHEAD_S = 0.5
ROUND_OVERHEAD_S = 5.0


def estimate_run_s(bench: Bench, n_cells: int) -> float:
    """Seconds: cells x rounds x (warm-up + budget + overhead), plus a start-up per round."""
    per_cell = bench.timer.warmup_s + bench.timer.budget_s + CELL_OVERHEAD_S
    return bench.rounds * (n_cells * per_cell + ROUND_OVERHEAD_S)
