"""The cells a run measures: the plan, with `--only`, `--cells` and `--shard` applied."""

from __future__ import annotations

from collections.abc import Sequence

from kernbench.execute.options import RunOptions
from kernbench.plan import Cell, pick, plan, refuse_empty, shard
from kernbench.spec.models import Bench


def checked_plan(
    options: RunOptions, bench: Bench, whole: Sequence[Cell] | None = None
) -> list[Cell]:
    """The run's cells (chosen from `whole`, the plan already built, where given); an
    empty plan is an error."""
    cells = planned_cells(options, bench, whole)
    refuse_empty(cells, options.bench_path, options.device)
    return cells


def planned_cells(
    options: RunOptions, bench: Bench, whole: Sequence[Cell] | None = None
) -> list[Cell]:
    cells = plan(bench, options.device, options.only, whole)  # --only applied as made
    if options.cells is not None:
        cells = pick(cells, options.cells)
    return shard(cells, options.shard) if options.shard else cells
