"""A run folder's journal into its results.json: the last step of a run, of `--resume`,
and of each side of an interleaved A/B."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.errors import UserError
from kernbench.execute.hosts import load_host_names
from kernbench.execute.journal import TASK, read_journal
from kernbench.execute.run_folder import RunFolder
from kernbench.plan import Cell, round_order
from kernbench.results import model as results_io
from kernbench.results import provenance
from kernbench.results.build import build_results, cell_result, describe, not_summarized
from kernbench.results.kinds import RESULTS_NAME
from kernbench.results.model import RoundResult, Topology
from kernbench.spec import hardware
from kernbench.spec.checks import world_size_of
from kernbench.spec.models import Bench, HardwareProfile


def build_run_results(
    run: RunFolder,
    cells: Sequence[Cell],
    complete: bool,
    started: Mapping[str, Any] | None = None,
) -> results_io.Results:
    """Every journaled round of `cells` as results, written to the run's results.json.

    `started`: the provenance read when the run began, before it wrote anything (so the
    run's own files cannot mark the tree dirty); read now when not given."""
    options, bench = run.options, run.bench
    profile, no_profile = _profile(bench, options.device, options.hardware, measured_on(run))
    rounds = options.rounds_range
    journal = read_journal(run.journal, cells, rounds)
    record_positions(journal.rounds, cells, options.order_seed, rounds)
    cell_results = [
        _cell_result(bench, cell, journal.rounds[cell.index], len(rounds), profile)
        for cell in cells
    ]
    if no_profile is not None:
        cell_results = [not_summarized(cell, no_profile) for cell in cell_results]
    where = dict(started) if started is not None else provenance.collect(options.device)
    results = build_results(
        bench, options.bench_path, options.model_dump(mode="json"), cell_results,
        journal.pins, journal.stale_pins, where, profile,
        complete, provenance.utc_now() if complete else None,
        topology(run, cells, where.get("host")),
    )
    results_io.save(results, run.path / RESULTS_NAME)
    return results


def topology(run: RunFolder, cells: Sequence[Cell], host: str | None) -> Topology:
    """The world size and hosts of the run: this host alone, or every host of a run over
    several, by the names its leader heard (hosts.json)."""
    hosts = run.options.hosts
    if hosts is None:
        world = max((world_size_of(c.params) for c in cells), default=1)
        return Topology(world_size=world, nproc_per_node=world, hosts=[host])
    names = load_host_names(run.path) or [host] + [None] * (hosts.nnodes - 1)
    return Topology(world_size=hosts.world_size, nnodes=hosts.nnodes,
                    nproc_per_node=hosts.nproc_per_node, hosts=names)


def record_positions(
    measured: Mapping[int, list[RoundResult]],
    cells: Sequence[Cell],
    seed: int | None,
    rounds: range,
) -> None:
    """Each round result's place in its round's order (the order `plan.round_order` gave
    the workers), so results.json says which cell preceded which."""
    for round_ in rounds:
        for position, cell in enumerate(round_order(cells, seed, round_)):
            for result in measured.get(cell.index, []):
                if result.round == round_:
                    result.position = position


def measured_on(run: RunFolder) -> str | None:
    """The device model the run's workers were told they measure on (their task files,
    else the provenance the run saved as it started), so results rebuilt elsewhere
    (`collect` on a laptop, from a folder copied without its task files) match the
    measuring machine's profile; None when neither says."""
    for task in sorted((run.path / "tasks").glob("r*.json")):
        try:
            return TASK.read(task).device_model
        except UserError:
            continue
    started = provenance.saved(run.path) or {}
    model = started.get("device_name")
    return str(model) if model else None


def _profile(
    bench: Bench, device: str, explicit: str | None, device_model: str | None = None
) -> tuple[HardwareProfile | None, str | None]:
    """The run's hardware profile, or None and why not: a profile that cannot be found
    (a typo in `hardware:`) fails the measured cells but must not lose them."""
    try:
        return select_profile(bench, device, explicit, device_model), None
    except UserError as exc:
        return None, f"hardware: {exc.message}"


def _cell_result(
    bench: Bench, cell: Cell, rounds: list[RoundResult], expected: int,
    profile: HardwareProfile | None,
) -> results_io.CellResult:
    """`cell_result`, or, should building it fail in a way nobody foresaw, the cell failed
    with why and its rounds kept: the samples are what a run is for."""
    try:
        return cell_result(bench, cell, rounds, expected, profile)
    except Exception as exc:  # noqa: BLE001 - any failure here would lose measured data
        return results_io.CellResult(
            id=cell.id, index=cell.index, variant=cell.variant, axes=dict(cell.axes),
            params=dict(cell.params), status="failed", rounds=rounds,
            reason=f"measured, but not summarized: {describe(exc)}",
        )


def select_profile(
    bench: Bench, device: str, explicit: str | None = None, device_model: str | None = None
) -> HardwareProfile | None:
    """`explicit` (the run's --hardware), else the bench's `hardware:`, else matched to
    `device_model` (default: this machine's)."""
    name = explicit or bench.hardware
    model = device_model or provenance.device_model(device)
    return hardware.select_profile(model, device, name, duty=bench.timer.duty)
