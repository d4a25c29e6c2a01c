"""What only a bench's plan shows, checked before anything is measured: the hardware
profile it names exists, its timer times the device, its exclusions leave a cell, the
kernel's own rule (an op bench: its inputs, as its factory makes them) accepts every
cell, every metric computes on every cell, and every figure it asks for fits it.
`validate`, `plan`, `run` and `ab` share it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kernbench.analyze.metrics import first_metric_problem
from kernbench.errors import SpecError, UserError
from kernbench.kernels import FactoryError, resolve_factory
from kernbench.kernels.rules import CELL_RULE, Rule, ask, module_rule
from kernbench.plan import Cell, iter_cells
from kernbench.spec import hardware
from kernbench.spec.figures import COLLECTIVE_KERNEL, COLLECTIVE_MODEL, BenchFacts, misfit
from kernbench.spec.models import Bench
from kernbench.spec.op_factory import CellInputError, cell_inputs
from kernbench.spec.timer_model import CUDA_TIMERS
from kernbench.spec.yaml_document import field_error


def check_bench(bench: Bench, path: Path, device: str | None = None) -> None:
    """What only the plan shows, as `PATH:LINE: field: message`: the hardware profile the
    bench names exists (and, on `device`, is one of its kind), on `device` the timer the
    bench names times it, some cell is left on some
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
    if device is not None and device != "cuda" and bench.timer.kind in CUDA_TIMERS:
        raise field_error(path, ("timer", "kind"), f"{bench.timer.kind} times CUDA work; on "
                          f"{device} every cell gets the cpu timer: use auto or cpu, or "
                          "--device cuda")
    if next(iter_cells(bench), None) is None:
        raise field_error(path, ("exclude",), "the exclusions drop every cell")
    _check_cells_against_the_kernel(bench, path, device)
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
            bench.rates,
        )
        for index, name in enumerate(bench.figures):
            why = misfit(name, facts)
            if why is not None:
                raise field_error(path, ("figures", str(index)), why)


def bench_notes(bench: Bench) -> list[str]:
    """What holds of a bench that checks and that its author may not expect, each a line
    (`validate`, `plan` and `run` print them): a collective whose cells do not sweep
    `bytes` has no message sizes to draw bus bandwidth or latency over."""
    notes = []
    if bench.kernel == COLLECTIVE_KERNEL or bench.model == COLLECTIVE_MODEL:
        sizes = {cell.params.get("bytes") for cell in iter_cells(bench)}
        if len(sizes) < 2:
            notes.append("a collective without a `bytes` axis of two sizes or more: its "
                         "results cannot be drawn as a bus-bandwidth sweep (figures busbw, "
                         "latency); add one to draw them")
    return notes


def _check_cells_against_the_kernel(bench: Bench, path: Path, device: str | None) -> None:
    """The factory module's `cell_problem` on each cell of `device`'s plan, or of each
    device's (exclusions may name the device): gemm's numpy backend refuses bf16 here,
    not in every cell of the run. An op bench's inputs likewise: `randint(0, experts - 8)`
    where `experts` is 8 is refused at the init's line."""
    if bench.op is not None:
        _check_op_inputs(bench, path, device)
        return
    rule = _cell_rule(bench, path)
    if rule is None:
        return
    for cell in _every_cell(bench, device):
        message = ask(rule, dict(cell.params))
        if message:
            raise field_error(path, _cell_field(bench, cell),
                              f"{bench.kernel_name}: {message} (cell {cell.id})")


def _check_op_inputs(bench: Bench, path: Path, device: str | None) -> None:
    # An op's expressions name no `device` (op_checks): a cell of both devices' plans
    # makes the same inputs on each, so each cell is evaluated once.
    seen: set[str] = set()
    for cell in _every_cell(bench, device):
        if cell.id in seen:
            continue
        seen.add(cell.id)
        try:
            cell_inputs(bench, dict(cell.params))
        except CellInputError as exc:
            raise field_error(path, exc.field, f"{exc.message} (cell {cell.id})") from None


def _every_cell(bench: Bench, device: str | None) -> Iterator[Cell]:
    for plan_device in [device] if device else list(hardware.DEVICES):
        yield from iter_cells(bench, plan_device)


def _cell_rule(bench: Bench, path: Path) -> Rule | None:
    if bench.kernel is None:
        return None
    try:
        factory = resolve_factory(bench.kernel, path.parent)
    except FactoryError:
        return None  # the loader reported it
    return module_rule(factory, CELL_RULE)


def _cell_field(bench: Bench, cell: Cell) -> tuple[str, ...]:
    """The variant's line where the bench names its variants, else the kernel's."""
    return ("variants", cell.variant) if "variants" in bench.model_fields_set else ("kernel",)
