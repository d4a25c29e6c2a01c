"""`kernbench run`: measure a bench (fast mode, redrawing its committed figures: fast.py)."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from kernbench.analyze.checks import bench_notes, check_bench
from kernbench.analyze.stats import UNRESOLVED_RULE, unresolved_advice
from kernbench.commands.failed_cells import failed_lines
from kernbench.commands.fast import render_fast
from kernbench.commands.run_checks import (
    check_kernel_unchanged,
    check_out,
    check_world_sizes,
    checked_gpus,
    reachable,
    run_finished,
)
from kernbench.commands.streams import stdout_to_nowhere
from kernbench.errors import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UserError
from kernbench.execute.cell_timers import check_timer_ids, read_timers
from kernbench.execute.finish import build_run_results, select_profile
from kernbench.execute.follow import follow, follower_folder
from kernbench.execute.hosts import default_rdzv_id, hosts_from_flags
from kernbench.execute.journal import is_all_journaled
from kernbench.execute.lock import folder_lock
from kernbench.execute.measure_run import execute
from kernbench.execute.options import RunOptions, holds_a_run, load_options, save_options
from kernbench.execute.pins import PIN_MODES, bench_pins_path, bench_source_hash, load_pins
from kernbench.execute.progress import note
from kernbench.execute.requirements import check_requirements
from kernbench.execute.run_cells import checked_plan, planned_cells
from kernbench.execute.run_folder import RunFolder
from kernbench.plan import Cell, parse_indices, plan
from kernbench.results import model as results_io
from kernbench.results import provenance
from kernbench.results.atomic import CannotWrite
from kernbench.results.build import describe
from kernbench.results.kinds import REPORT_HTML, REPORT_MD, RESULTS_NAME, RUN_JSON_NAME
from kernbench.results.outpaths import out_folder
from kernbench.spec import hardware
from kernbench.spec.discovery import find_bench, is_shipped
from kernbench.spec.drift import REBUILT_ONLY, bench_drift
from kernbench.spec.loader import load_bench
from kernbench.spec.models import Bench, spec_hash
from kernbench.units import counted
from kernbench.worker_env import FAST_ENV, SIDE_ENV

FAST_ON = ("1", "true", "yes", "on")
FAST_OFF = ("", "0", "false", "no", "off")


@dataclass
class RunRequest:
    """A `kernbench run` command line: the options of a new run, or the folder to resume."""

    bench: str | None = None
    bench_dirs: Sequence[Path] = ()
    out: Path | None = None
    device: str = "auto"
    rounds: int | None = None
    first_round: int = 1
    fast: bool = False
    resume: Path | None = None
    pins: Path | None = None
    pins_mode: str | None = None
    save_pins: bool = False  # also write the recorded pins into the bench's pins file
    timers: Path | None = None  # {cell id: timer}: the cells' timers (an A/B's sides)
    hardware: str | None = None  # the hardware profile, over the bench's `hardware:`
    figures: bool | None = None  # None: draw them (on --resume: as the run started)
    only: Sequence[str] = ()
    cells: str | None = None  # I,J,...: plan indices, of the cells chosen (an A/B's side)
    shard: str | None = None
    order_seed: str | None = None  # N, or "plan"; None: a fresh seed, recorded in run.json
    # A run over several hosts (torchrun's flags); None: this host alone.
    nnodes: int | None = None
    node_rank: int | None = None
    nproc_per_node: int | None = None
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None
    gpus: str | None = None  # N or all: a worker per GPU, the cells dealt out
    force: bool = False  # with gpus: GPUs of different models too


_DEFAULTS = {f.name: getattr(RunRequest(), f.name) for f in fields(RunRequest)}


def options_given(request: RunRequest, keep: Sequence[str]) -> list[str]:
    """The options on the command line, other than `keep`, as they are spelled there."""
    flags = {"bench_dirs": "--bench-dir"}
    return [flags.get(f.name, "--" + f.name.replace("_", "-")) for f in fields(request)
            if f.name not in keep and getattr(request, f.name) != _DEFAULTS[f.name]]


def order_seed(given: str | None) -> int | None:
    """--order-seed: an integer, `plan` (no shuffle: None), or a fresh seed when not given."""
    if given is None:
        return secrets.randbelow(2**31)
    if given == "plan":
        return None
    try:
        return int(given)
    except ValueError:
        raise UserError(f"--order-seed: {given!r} is not an integer or `plan`") from None


def fast_requested(flag: bool) -> bool:
    """--fast, or MILESTONE_FAST on (1, true, yes, on; 0, false, no, off or unset: off)."""
    raw = os.environ.get(FAST_ENV, "")
    value = raw.strip().lower()
    if value not in FAST_ON + FAST_OFF:
        raise UserError(f"{FAST_ENV}: {raw!r} is not 1, true, yes, on (fast mode) or 0, false, "
                        "no, off")
    return flag or value in FAST_ON


def run(request: RunRequest) -> int:
    if request.resume is not None:
        given = options_given(request, keep=("resume", "figures"))
        if given:
            raise UserError(f"--resume: the run goes on with its own settings ({RUN_JSON_NAME}); "
                            f"drop {', '.join(given)}")
        return resume(reachable(request.resume, "--resume"), figures=request.figures)
    if not request.bench:
        raise UserError("--bench: give a bench name (see `kernbench list`) or --resume DIR")
    bench, bench_path = find_bench(request.bench, request.bench_dirs)
    out = reachable(request.out or Path("runs") / bench.name / provenance.utc_stamp(), "--out")
    if fast_requested(request.fast):
        ignored = options_given(request, keep=("bench", "bench_dirs", "out", "fast", "figures"))
        if ignored:
            note("note: fast mode draws the bench's committed data as it is: "
                 f"{', '.join(ignored)} ignored")
        return render_fast(bench, bench_path, out)
    options = new_options(request, bench, bench_path)
    check_requirements(bench, bench_path, options.device, options.hosts)
    check_bench(bench, bench_path, options.device)  # a metric or profile error: before measuring
    for line in bench_notes(bench):
        note(f"note: {line}")
    note_ceilings_duty(bench, options.device, options.hardware)
    whole = None  # the plan without --only, --cells or --shard, where --timers needs it
    if request.timers is not None:  # a missing, malformed or mistaken file: before measuring
        whole = plan(bench, options.device)
        check_timer_ids(request.timers, read_timers(request.timers), whole)
    cells = checked_plan(options, bench, whole)  # a bad --only or --shard, no cell: no folder
    if options.hosts is not None:
        check_world_sizes(options.hosts, cells)
        if not options.hosts.leads:
            return follow(RunFolder(options, bench, follower_folder(out, options.hosts.node_rank)))
    if not holds_a_run(out):  # a run's folder is checked under its lock: it may be live
        check_out(out)
        out_folder(out)  # made here, so that a folder that cannot be is said so
    with folder_lock(out, note):
        check_out(out)  # again, under the lock: another run may have started there
        save_options(out, options)
        return measure(RunFolder(options, bench, out))


def note_ceilings_duty(bench: Bench, device: str, explicit: str | None) -> None:
    """Say so when the bench times under another duty than its profile's ceilings were
    calibrated under: an isolated GEMM reads up to 15% faster on a power-capped card and
    lands above ceilings taken sustained."""
    if device != "cuda":
        return
    try:
        profile = select_profile(bench, device, explicit)
    except UserError:
        return  # the run records why it has no profile
    if profile is None:
        return
    calibrated = hardware.calibrated_duty(profile)
    if calibrated not in (None, bench.timer.duty):
        duty = bench.timer.duty
        variant = hardware.duty_variant_name(profile.name, duty)
        found_by = ("name it with --hardware" if explicit or bench.hardware else
                    "runs of that duty then read it")
        note(f"note: {bench.name} times under the {duty} duty; the ceilings of "
             f"profile {profile.name} were calibrated under {calibrated}, so its "
             f"utilization may read above 1 (kernbench calibrate --bench {bench.name} "
             f"writes {variant}; {found_by})")


def new_options(request: RunRequest, bench: Bench, bench_path: Path) -> RunOptions:
    """The options of a new run, from its command line and the bench's defaults."""
    if request.pins_mode and request.pins_mode not in PIN_MODES:
        raise UserError(
            f"--pins-mode: {request.pins_mode!r} is not one of {', '.join(PIN_MODES)}"
        )
    pins = request.pins.resolve() if request.pins is not None else None
    if pins is not None and request.pins_mode != "record" and not pins.exists():
        raise UserError(f"--pins: {request.pins} does not exist")
    if request.save_pins and pins is not None:
        raise UserError(
            "--save-pins: writes the bench's own pins file; with --pins FILE, "
            "use --pins-mode record (or auto) to write FILE"
        )
    if request.save_pins and is_shipped(bench_path):
        raise UserError(f"--save-pins: {bench.name} is shipped with kernbench, which is not "
                        f"written to; copy {bench_path.parent} to ./benches (a bench there "
                        "shadows the shipped one of its name) and save its pins there")
    device = hardware.resolve_device(request.device)
    if request.hardware is not None:  # an unknown name, or another device's, fails early
        hardware.device_profile(request.hardware, device)
    bench_path = bench_path.resolve()
    project_pins = None if pins else bench_pins_path(bench_path, bench.name)
    for option, path in (("--pins", pins), ("the bench's pins", project_pins)):
        if path is not None and path.exists():  # so every cell does not fail reading it
            try:
                load_pins(path)
            except UserError as exc:
                raise UserError(f"{option}: {exc}") from None
    hosts = hosts_from_flags(
        request.nnodes, request.node_rank, request.nproc_per_node, request.rdzv_endpoint,
        request.rdzv_id, default_rdzv_id(bench.name, spec_hash(bench), request.rdzv_endpoint),
    )
    return RunOptions(
        bench_path=bench_path,
        spec_hash=spec_hash(bench),
        spec=bench.model_dump(mode="json"),
        device=device,
        rounds=request.rounds or bench.rounds,
        first_round=request.first_round,
        pins=pins,
        pins_mode=request.pins_mode or ("replay" if pins else "auto"),
        project_pins=project_pins,
        save_pins=request.save_pins,
        timers=request.timers.resolve() if request.timers is not None else None,
        hardware=request.hardware,
        side=os.environ.get(SIDE_ENV, ""),
        figures=True if request.figures is None else request.figures,
        only=tuple(request.only),
        cells=parse_indices(request.cells),
        shard=request.shard,
        order_seed=order_seed(request.order_seed),
        hosts=hosts,
        gpus=checked_gpus(request.gpus, request.force, request.device, hosts),
        force=request.force,
        kernel_source=bench_source_hash(bench, bench_path.parent),
    )


def resume(out: Path, figures: bool | None = None) -> int:
    """Finish the run in `out` with the options it started with (figures: as asked)."""
    if not holds_a_run(out):
        raise UserError(f"--resume: {out} holds no run ({RUN_JSON_NAME} not found)")
    with folder_lock(out, note):
        run = open_run(out, "--resume")
        check_kernel_unchanged(run.options, run.bench)
        if figures is None and _nothing_to_do(run):
            print(f"{out}: the run is already complete, nothing to measure; results: "
                  f"{out / RESULTS_NAME}, report: {out / REPORT_HTML} (kernbench collect "
                  f"{out} rebuilds them)")
            return EXIT_OK
        if figures is not None:
            run = replace(run, options=run.options.replace(figures=figures))
        return measure(run)


def _nothing_to_do(run: RunFolder) -> bool:
    """Every cell round journaled, the outputs written from them, the bench unchanged:
    a resume would measure nothing and write the same files again."""
    cells = [cell.index for cell in planned_cells(run.options, run.bench)]
    return (run_finished(run.path)
            and all((run.path / report).is_file() for report in (REPORT_MD, REPORT_HTML))
            and is_all_journaled(run.journal, run.options.rounds_range, cells, readable=True)
            and bench_drift(run.options.spec, run.options.spec_hash, run.bench) is None)


def open_run(out: Path, command: str) -> RunFolder:
    """The run in `out` with the bench its run.json names, as the bench is now. A bench
    changed only in what is computed from the measurements (metrics, hardware, figures:
    `REBUILT_FIELDS`, `PRESENTATION_FIELDS`) or in its default rounds is taken with a note;
    any other change is refused, for the journal holds what the old bench measured."""
    options = load_options(out)
    bench = load_bench(options.bench_path)
    drifted = bench_drift(options.spec, options.spec_hash, bench)
    if drifted:
        raise UserError(
            f"{command}: {options.bench_path} changed since the run started "
            f"({', '.join(drifted)}); start a new run"
        )
    if drifted is not None:
        note(f"note: {options.bench_path} changed since the run started, {REBUILT_ONLY}; "
             "its results are rebuilt with the bench as it is now")
    return RunFolder(options, bench, out)


def measure(run: RunFolder) -> int:
    try:
        started = provenance.save_start(run.path, run.options.device)
    except KeyboardInterrupt:  # its run.json is written: the folder holds a run to finish
        note(f"interrupted before the first cell; start it with: kernbench run --resume {run.path}")
        return EXIT_INTERRUPTED
    stopped: int | None = None  # the exit code of a run stopped before its end
    try:
        cells = execute(run)
    except KeyboardInterrupt:
        cells, stopped = planned_cells(run.options, run.bench), EXIT_INTERRUPTED
    except BrokenPipeError:  # the progress's reader went away (`| head`): stopped as by Ctrl-C
        stdout_to_nowhere()
        cells, stopped = planned_cells(run.options, run.bench), EXIT_BROKEN_PIPE
    except CannotWrite as exc:  # a full disk: the journal keeps what was measured
        raise kept_for_resume(exc, run) from None
    reader_gone = stopped == EXIT_BROKEN_PIPE
    if stopped is not None and is_all_journaled(run.journal, run.options.rounds_range,
                                                [c.index for c in cells]):
        stopped = None  # stopped after its last cell (`| head -n 3` of 4 lines): complete
    try:
        results, trouble = finish(run, cells, complete=stopped is None, started=started)
    except CannotWrite as exc:
        raise kept_for_resume(exc, run) from None
    except KeyboardInterrupt:  # while the figures and report were written
        print(f"interrupted while writing the run's outputs; finish with: kernbench run "
              f"--resume {run.path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if stopped is not None:
        done = sum(c.status != "pending" for c in results.cells)
        kept = sum(len(c.rounds) for c in results.cells)
        print(f"interrupted: {counted(kept, 'cell round')} kept, "
              f"{done} of {counted(len(results.cells), 'cell')} complete; finish with: "
              f"kernbench run --resume {run.path}", file=sys.stderr)
        return stopped
    code = report(results, run.path, trouble)  # to no reader when it went away
    return EXIT_BROKEN_PIPE if reader_gone else code  # as any command whose reader left


def kept_for_resume(exc: CannotWrite, run: RunFolder) -> UserError:
    return UserError(f"{exc.message}; the cells measured are kept in {run.journal}: make "
                     f"room, then kernbench run --resume {run.path}", exc.code)


def finish(
    run: RunFolder, cells: list[Cell], complete: bool, started: dict | None = None
) -> tuple[results_io.Results, str | None]:
    """results.json from the journal, then (once complete) the other outputs. The
    results are written first, whatever happens to the outputs: a figure that cannot be
    drawn is one line (the second value), never a lost run."""
    results = build_run_results(run, cells, complete, started)
    if not complete:
        return results, None
    from kernbench.render.outputs import write_run_outputs  # matplotlib: only when drawing

    try:
        write_run_outputs(results, run.path, skip=() if run.options.figures else ("figures",))
    except CannotWrite as exc:  # a full disk: not the figures' fault, and it passes
        return results, (f"outputs not all written: {exc.message}; make room, then "
                         f"kernbench run --resume {run.path} writes them")
    except UserError as exc:
        return results, f"figures not drawn: {exc.message}"
    except Exception as exc:  # noqa: BLE001 - the results are written; say why, no traceback
        return results, f"figures not drawn: {describe(exc)}"
    return results, None


def report(results: results_io.Results, out_dir: Path, trouble: str | None = None) -> int:
    counts: dict[str, int] = {}
    for cell in results.cells:
        counts[cell.status] = counts.get(cell.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    print(f"{results.bench}: {counted(len(results.cells), 'cell')} ({summary})")
    unsteady = sum(bool(cell.unsteady) for cell in results.cells)
    if unsteady:
        tolerance = results.timer_setting("steady_tol")
        print(f"  {unsteady} unsteady: their rounds differ by more than {tolerance:.0%} "
              "(timer.steady_tol), flagged in the report and marked in the figures")
    unresolved = sum(bool(cell.unresolved) for cell in results.cells)
    if unresolved:
        print(f"  {unresolved} unresolved: {UNRESOLVED_RULE} "
              f"({unresolved_advice(results.device).remedy}), flagged in the report "
              "and marked in the figures")
    for stale in results.stale_pins:
        print(f"stale pin re-tuned: {stale}", file=sys.stderr)
    bad = results.failed_cells()
    for line in failed_lines(bad):
        print(line, file=sys.stderr)
    if any(cell.summary is not None for cell in bad):
        print(f"measured cells kept: fix the bench, then `kernbench collect {out_dir}` "
              "rebuilds the results", file=sys.stderr)
    if trouble:
        print(f"{out_dir}: {trouble}", file=sys.stderr)
    print(f"results: {out_dir / RESULTS_NAME}")
    if (out_dir / REPORT_HTML).is_file():
        print(f"report: {out_dir / REPORT_HTML}")
    return EXIT_FAILED if bad or trouble else EXIT_OK
