"""What only a bench's plan shows, checked before anything is measured: the hardware
profile it names exists, and every metric computes on every cell. `validate`, `plan`,
`run` and `ab` share it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kernbench.analyze.metrics import first_metric_problem
from kernbench.errors import SpecError, UserError
from kernbench.plan import Cell, iter_cells
from kernbench.spec import hardware
from kernbench.spec.loader import field_error
from kernbench.spec.models import FIGURE_RENDERERS, RENDERER_NEEDS, Bench


def check_bench(bench: Bench, path: Path, device: str | None = None) -> None:
    """What only the plan shows, as `PATH:LINE: field: message`: the hardware profile the
    bench names exists, each figure fits its cells, and every metric computes on every
    cell (on `device`'s plan, or without a device: every cell any device could have)."""
    if bench.hardware is not None:
        try:
            hardware.named_profile(bench.hardware)
        except SpecError:
            raise
        except UserError as exc:
            raise field_error(path, ("hardware",), exc.message) from None
    misfit = first_misfit(bench, iter_cells(bench, device))
    if misfit is not None:
        index, why = misfit
        raise field_error(path, ("figures", str(index)), why)
    problem = first_metric_problem(bench, iter_cells(bench, device))
    if problem is not None:
        message = f"{problem.why} (cell {problem.cell.id})"
        raise field_error(path, ("metrics", problem.name), message)


def first_misfit(bench: Bench, cells: Iterable[Cell]) -> tuple[int, str] | None:
    """(index, why) of the first figure the bench asks for whose renderer needs cell
    parameters the cells lack (a GEMM figure of a bench without M, N, K)."""
    if not bench.figures:
        return None
    have: set[str] = set()
    for cell in cells:
        have.update(cell.params)
    for index, name in enumerate(bench.figures):
        renderer = FIGURE_RENDERERS[name]
        missing = [p for p in RENDERER_NEEDS.get(renderer, ()) if p not in have]
        if missing:
            return index, (f"figure {name!r} plots cells with {', '.join(RENDERER_NEEDS[renderer])}"
                           f"; this bench's cells have no {', '.join(missing)}")
    return None
