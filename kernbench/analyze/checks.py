"""What only a bench's plan shows, checked before anything is measured: the hardware
profile it names exists, its exclusions leave a cell, every metric computes on every cell,
and every figure it asks for fits it. `validate`, `plan`, `run` and `ab` share it."""

from __future__ import annotations

from pathlib import Path

from kernbench.analyze.metrics import first_metric_problem
from kernbench.errors import SpecError, UserError
from kernbench.plan import iter_cells
from kernbench.spec import hardware
from kernbench.spec.figures import BenchFacts, misfit
from kernbench.spec.loader import field_error
from kernbench.spec.models import Bench


def check_bench(bench: Bench, path: Path, device: str | None = None) -> None:
    """What only the plan shows, as `PATH:LINE: field: message`: the hardware profile the
    bench names exists (and, on `device`, is one of its kind), some cell is left on some
    device (one excluded on `device` only is the run's to say), every metric computes on
    every cell (on `device`'s plan, or without a device: every cell any device could
    have), and each figure fits the bench's model and cells."""
    if bench.hardware is not None:
        try:
            if device is None:
                hardware.named_profile(bench.hardware)
            else:
                hardware.device_profile(bench.hardware, device)
        except SpecError:
            raise
        except UserError as exc:
            raise field_error(path, ("hardware",), exc.message) from None
    if next(iter_cells(bench), None) is None:
        raise field_error(path, ("exclude",), "the exclusions drop every cell")
    if next(iter_cells(bench, device), None) is None:
        device = None  # none on this device (the run says so): check the bench's own cells
    problem = first_metric_problem(bench, iter_cells(bench, device))
    if problem is not None:
        message = f"{problem.why} (cell {problem.cell.id})"
        raise field_error(path, ("metrics", problem.name), message)
    if bench.figures:
        facts = BenchFacts.of(
            bench.kernel or "",  # an op bench names no kernel
            bench.model,
            bench.metrics,
            (cell.params for cell in iter_cells(bench, device)),
        )
        for index, name in enumerate(bench.figures):
            why = misfit(name, facts)
            if why is not None:
                raise field_error(path, ("figures", str(index)), why)
