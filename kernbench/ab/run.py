"""`kernbench ab`: settings, the A/B plan (ab-run.json), the rounds under the chosen
schedule, then ab.json and the report.

Two schedules (docs/adr/0022-interleaved-ab.md): `interleaved` (the default), where a
round's sides live side by side and take turns per cell (`ab.interleaved`), and
`sequential`, where each side is a whole run after the other (`ab.sides`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.ab.gate import fail_on_choice, failing, gate_rounds_problem, weak_caveat
from kernbench.ab.interleaved import execute_rounds
from kernbench.ab.outcomes import found_turns, is_whole, load_outcomes, round_finished
from kernbench.ab.outputs import (
    closing_lines,
    opening_line,
    stopped_line,
    summarize_ab,
    verdict_table,
)
from kernbench.ab.pairing import CellPair, pair_cells, switches_variant
from kernbench.ab.resume_machine import check_machine
from kernbench.ab.schedule import (
    PINS_NAME,
    AbManifest,
    add_round,
    interleaved_schedule,
    load_manifest,
    save_manifest,
)
from kernbench.ab.schedule import schedule as sequential_schedule
from kernbench.ab.settings import AB_CHOICES, AbChoices, resolve_settings
from kernbench.ab.sides import SideRunner, execute_runs, run_subprocess
from kernbench.ab.switch_check import switch_warning
from kernbench.analyze.checks import check_bench
from kernbench.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UserError
from kernbench.execute.lock import LOCK_NAME, folder_lock
from kernbench.execute.options import holds_a_run, load_options
from kernbench.execute.pins import bench_pins_path, load_pins, save_pins
from kernbench.execute.progress import note
from kernbench.execute.requirements import check_requirements
from kernbench.plan import Cell, plan, refuse_empty
from kernbench.results.ab import AbReport
from kernbench.results.atomic import is_temporary_of
from kernbench.results.kinds import AB_MANIFEST_NAME
from kernbench.results.outpaths import out_folder
from kernbench.results.provenance import utc_now, utc_stamp
from kernbench.spec.ab_model import AbSchedule, AbSpec, FailOn
from kernbench.spec.checks import world_size_of
from kernbench.spec.discovery import find_bench
from kernbench.spec.drift import REBUILT_ONLY, bench_drift
from kernbench.spec.hardware import resolve_device
from kernbench.spec.loader import load_bench
from kernbench.spec.models import Bench, spec_hash
from kernbench.spec.op_factory import bench_source
from kernbench.spec.yaml_document import field_error
from kernbench.units import counted


@dataclass(frozen=True)
class AbOutcome:
    folder: Path
    report: AbReport
    exit_code: int  # 0, 1 when some variant failed, 130 when interrupted


def run_ab(
    bench: str,
    *,
    switch: str | None = None,
    a: str | None = None,
    b: str | None = None,
    rounds: int | str | None = None,
    aa: bool | None = None,
    min_effect: float | None = None,
    schedule: str | None = None,
    turn_ms: float | None = None,
    a_unset: bool | None = None,
    b_unset: bool | None = None,
    out: Path | None = None,
    device: str = "auto",
    bench_dirs: Sequence[Path] = (),
    only: Sequence[str] | None = (),
    run_side: SideRunner = run_subprocess,
    echo: Callable[[str], None] = note,
    fail_on: FailOn | None = None,
) -> AbOutcome:
    """Run an A/B of `switch` on `bench` and write ab.json and the report.

    Options left None come from the bench's `ab:` block, then the defaults; `only` chooses
    cells as `kernbench run --only` does; `fail_on` (the gate `ab` applies) is refused
    where the rounds cannot reach a 95 % interval."""
    spec, bench_path = find_bench(bench, bench_dirs)
    settings = resolve_settings(spec, AbChoices(
        switch=switch, a=a, b=b, a_unset=a_unset, b_unset=b_unset, rounds=rounds, aa=aa,
        min_effect=min_effect, schedule=schedule, turn_ms=turn_ms,
    ))
    if problem := gate_rounds_problem(fail_on, settings.rounds):
        raise UserError(f"{problem}: give more --rounds, or auto")
    device = resolve_device(device)
    # What `run` refuses (requires.device, no CUDA): before the folder or any side exists.
    check_requirements(spec, bench_path, device)
    check_bench(spec, bench_path, device)  # a metric or profile error: before any side runs
    only = tuple(only or ())
    pairs = ab_cells(spec, bench_path, device, only, settings, echo)
    folder = Path(out) if out else Path("runs") / f"ab_{settings.switch}_{utc_stamp()}"
    _check_new_folder(folder)

    by_variant = switches_variant(settings.switch)
    # Is the variable read at all? (Two variants run what their options say.)
    warning = None if by_variant else switch_warning(
        settings.switch, spec.kernel_name, bench_source(spec, bench_path.parent),
        spec.variants)
    if warning:
        echo(warning)
    chosen, note = choose_schedule(settings.schedule, [p.cell(s) for p in pairs for s in "AB"])
    make_runs = interleaved_schedule if chosen == "interleaved" else sequential_schedule
    committed = bench_pins_path(bench_path, spec.name).resolve()

    manifest = AbManifest(
        schedule=chosen,
        schedule_note=note,
        switch_note=warning,
        turn_s=settings.turn_ms / 1000 if settings.turn_ms else None,
        bench=spec.name,
        bench_path=str(Path(bench_path).resolve()),
        bench_dirs=[str(Path(d).resolve()) for d in bench_dirs],
        device=device,
        switch=settings.switch,
        a=settings.a,
        b=settings.b,
        rounds=settings.rounds,
        max_rounds=settings.max_rounds,
        aa=settings.aa,
        min_effect=settings.min_effect,
        variants=list(dict.fromkeys(pair.variant for pair in pairs)),
        only=list(only),
        pins_from=str(committed) if committed.is_file() else None,
        created_utc=utc_now(),
        runs=make_runs(settings.rounds, settings.a, settings.b, settings.aa, by_variant),
    )
    echo(opening_line(manifest, len(pairs)))
    with folder_lock(folder, echo):
        save_manifest(folder, manifest)
        start_pins(folder, manifest, echo)
        return run_rounds(folder, manifest, spec, pairs, range(1, manifest.rounds + 1),
                          run_side, echo)


def _check_new_folder(folder: Path) -> None:
    """An A/B's `--out`: new or empty, but for what an A/B killed before its plan was
    saved leaves (its lock, a temporary of ab-run.json): no plan there, so no A/B to
    resume, and the new one writes both over."""
    if out_folder(folder, create=False).exists() and any(
        p.name != LOCK_NAME and not is_temporary_of(p, AB_MANIFEST_NAME)
        for p in folder.iterdir()
    ):
        raise UserError(f"--out: {folder} is not empty; give a new folder")


def start_pins(folder: Path, manifest: AbManifest, echo: Callable[[str], None]) -> None:
    """The A/B's pins file begins as the bench's committed one, so both sides replay the
    configurations the bench's committed data was measured with (ADR 0068); the first run
    tunes only what it lacks, or holds stale."""
    pins = load_pins(Path(manifest.pins_from)) if manifest.pins_from else {}
    save_pins(folder / PINS_NAME, pins)
    if pins:
        echo(f"pins: starting from {manifest.pins_from} ({counted(len(pins), 'pin')}); "
             "round 1 tunes the cells it has no valid pin for")


def ab_cells(
    spec: Bench, bench_path: Path, device: str, only: Sequence[str],
    settings: AbSpec | AbManifest, echo: Callable[[str], None] | None = None,
) -> list[CellPair]:
    """The A/B's cells: each a pair of what side A and side B time (`ab.pairing`); a plan
    of none is refused as `run` refuses it, at the bench's `exclude:`."""
    cells = plan(spec, device, only)
    refuse_empty(cells, bench_path, device)
    pairs, alone = pair_cells(cells, settings.switch, settings.a, settings.b)
    if not pairs:
        why = (f"no cell of {settings.a} has a twin of {settings.b} among the cells chosen "
               f"on {device}")
        if only:
            raise UserError(f"--only: {why}")
        raise field_error(bench_path, ("exclude",), f"the A/B's plan for device {device} is "
                          f"empty: {why}: the exclusions drop every twin")
    if alone and echo is not None:
        echo(f"note: {counted(len(alone), 'cell')} of {settings.a} or {settings.b} without a "
             f"twin of the other variant (an exclusion), not compared, e.g. {alone[0].id}")
    return pairs


# What `--resume` refuses: the A/B's settings (it goes on with those in ab-run.json), and
# its folder, cells, device and bench folders, which its kept sides fixed (`device` None:
# not on the command line).
RESUME_FIXED = (*AB_CHOICES, "out", "only", "device", "bench_dirs")


def ab(
    bench: str | None, resume: Path | None, fail_on: str | None = None, force: bool = False,
    **options: Any,
) -> AbOutcome:
    """`kernbench ab`: a new A/B of `bench`, or (`resume`) the rest of an interrupted one
    (`force`: on another device model than its kept sides); exit 1 also when a cell's
    verdict matches `fail_on` (a CI gate)."""
    gate_on = fail_on_choice(fail_on)  # a bad --fail-on: refused before anything runs
    if resume is None:
        if force:
            raise UserError("--force: only with --resume, to resume on another device model")
        if not bench:
            raise UserError("--bench: give a bench name (see `kernbench list`) or --resume DIR")
        return gated(run_ab(bench, fail_on=gate_on, **options), gate_on)
    given = (["--bench"] if bench else []) + [
        _option_name(name) for name in RESUME_FIXED if options.get(name) not in (None, (), [])
    ]
    if given:
        raise UserError(f"--resume: the A/B goes on with its own settings ({AB_MANIFEST_NAME}); "
                        f"drop {', '.join(given)}")
    # ab-run.json read early only for a gate; resume_ab reads it in any case.
    if gate_on and (problem := gate_rounds_problem(gate_on, load_manifest(resume).rounds)):
        raise UserError(f"{problem}: resume {resume} without --fail-on")
    return gated(resume_ab(resume, force=force), gate_on)


def _option_name(setting: str) -> str:
    return "--bench-dir" if setting == "bench_dirs" else f"--{setting.replace('_', '-')}"


def gated(outcome: AbOutcome, fail_on: FailOn | None) -> AbOutcome:
    called = failing(outcome.report.cells, fail_on)
    if not called or outcome.exit_code == EXIT_INTERRUPTED:  # its 130 stands: calls partial
        return outcome
    caveat = weak_caveat(c.ci_coverage for c in called)  # judged without a failed round
    note(f"--fail-on {fail_on}: {counted(len(called), 'cell')}{caveat}: "
         f"{', '.join(c.id for c in called)}")
    return AbOutcome(outcome.folder, outcome.report, EXIT_FAILED)


def resume_ab(
    folder: Path,
    *,
    run_side: SideRunner = run_subprocess,
    echo: Callable[[str], None] = note,
    force: bool = False,
) -> AbOutcome:
    """Continue an interrupted A/B from what it finished: sequential sides that left
    their whole results, interleaved rounds that left their turns and every side's
    results, are kept; the others run again from scratch, then the rounds left. Kept
    sides of another device model than this machine's are refused unless `force`."""
    folder = Path(folder)
    manifest = load_manifest(folder)
    with folder_lock(folder, echo):
        bench_path = Path(manifest.bench_path)
        if not bench_path.is_file():  # an A/B folder copied from another machine, a moved bench
            raise UserError(f"--resume: the A/B's bench {bench_path} ({AB_MANIFEST_NAME} "
                            "bench_path) is not there; the sides left to run need it")
        spec = load_bench(bench_path)
        _check_unchanged(folder, manifest, spec, echo)
        pairs = ab_cells(spec, bench_path, manifest.device, manifest.only, manifest)
        outcomes = load_outcomes(folder, manifest)  # read once: kept and machine-checked
        if manifest.schedule == "interleaved":
            kept = {r for r in range(1, manifest.rounds + 1)
                    if round_finished(folder, manifest, r, outcomes)}
            sides = {run.name for run in manifest.runs if run.round in kept}
        else:
            sides = {name for name, outcome in outcomes.items() if is_whole(outcome)}
        check_machine(manifest, {name: outcomes[name] for name in sides}, force, echo)
        left = [run for run in manifest.runs if run.name not in sides]
        if left:  # sides to run here, --force or not, need what the bench requires
            check_requirements(spec, bench_path, manifest.device)
        for run in left:
            _clear_side(folder, run.name)
        for round_ in {run.round for run in left}:
            while (stale := found_turns(folder, round_)) is not None:
                stale.unlink()
        echo(f"resuming {folder}: {len(sides)} of {counted(len(manifest.runs), 'side')} kept, "
             f"{len(left)} to run")
        if not (folder / PINS_NAME).is_file():  # killed between its plan and its pins
            start_pins(folder, manifest, echo)
        rounds = sorted({run.round for run in left})
        return run_rounds(folder, manifest, spec, pairs, rounds, run_side, echo, kept=sides)


def run_rounds(
    folder: Path,
    manifest: AbManifest,
    spec: Bench,
    pairs: Sequence[CellPair],
    first: Sequence[int],
    run_side: SideRunner,
    echo: Callable[[str], None],
    kept: Collection[str] = (),
) -> AbOutcome:
    """Run the rounds `first` (but the sides `kept`), then, with `--rounds auto`, one
    more at a time while a cell is unstable; then the report."""

    def run_some(rounds: Sequence[int], keep: Collection[str] = ()) -> bool:
        """Whether the rounds ran to their end (False: interrupted)."""
        try:
            if manifest.schedule == "interleaved":
                execute_rounds(folder, manifest, spec, pairs, echo, rounds)
            else:
                execute_runs(folder, manifest, spec_hash(spec), pairs, run_side, echo, rounds,
                             keep)
        except KeyboardInterrupt:
            return False
        return True

    if first and not run_some(first, kept):
        return _interrupted(folder, echo)
    report = summarize_ab(folder)
    while manifest.max_rounds and manifest.rounds < manifest.max_rounds:
        unstable = [c.id for c in report.cells if c.verdict == "unstable"]
        if not unstable:
            break
        manifest = add_round(manifest)
        save_manifest(folder, manifest)
        echo(f"{counted(len(unstable), 'cell')} unstable after "
             f"{counted(manifest.rounds - 1, 'round')}: "
             f"round {manifest.rounds} of at most {manifest.max_rounds}")
        if not run_some([manifest.rounds]):
            return _interrupted(folder, echo)
        report = summarize_ab(folder)
    for line in verdict_table(report) + closing_lines(report):
        echo(line)
    echo(f"A/B report: {folder / 'report.md'}")
    return AbOutcome(folder, report, EXIT_FAILED if report.failed_variants else EXIT_OK)


def _interrupted(folder: Path, echo: Callable[[str], None]) -> AbOutcome:
    """The report of the rounds finished so far, and the one line saying so."""
    report = summarize_ab(folder)
    for line in verdict_table(report) + closing_lines(report):
        echo(line)
    # Stopped after its last round's outcome was written, it still says so: N of N rounds.
    echo(stopped_line(folder, report.rounds, report.planned_rounds or report.rounds,
                      folder / "report.md"))
    return AbOutcome(folder, report, EXIT_INTERRUPTED)


def _check_unchanged(folder: Path, manifest: AbManifest, spec: Bench,
                      echo: Callable[[str], None]) -> None:
    """The sides measured so far ran the bench as it is, or as `run --resume` takes it
    (changed only in what is computed from the measurements); else it is refused."""
    rebuilt_only = False
    for run in manifest.runs:
        if not holds_a_run(folder / run.name):
            continue
        try:
            measured = load_options(folder / run.name)
        except UserError:
            continue  # a side cut short while writing it: run again anyway
        drifted = bench_drift(measured.spec, measured.spec_hash, spec)
        if drifted:
            raise UserError(f"--resume: {manifest.bench_path} changed since the A/B started "
                            f"({', '.join(drifted)}); start a new A/B")
        rebuilt_only = rebuilt_only or drifted is not None
    if rebuilt_only:
        echo(f"note: {manifest.bench_path} changed since the A/B started, {REBUILT_ONLY}; "
                "the verdicts are on time alone, the sides still to run compute the rest "
                "with the bench as it is now")


def _clear_side(folder: Path, name: str) -> None:
    """A side to run again starts from an empty folder (a run refuses a folder that
    holds one); one still held by a live side (left running by an A/B killed before
    sides died with it) is refused, not cleared under it."""
    side = folder / name
    if side.is_dir():
        with folder_lock(side, lambda _: None):  # a dead holder's lock: cleared anyway
            shutil.rmtree(side)
    elif side.exists():
        side.unlink()


def choose_schedule(asked: str, cells: Sequence[Cell]) -> tuple[AbSchedule, str | None]:
    """The schedule to run, and a note when it is not the one asked for."""
    if asked == "interleaved" and any(world_size_of(c.params) > 1 for c in cells):
        return "sequential", (
            "interleaved asked for, but cells with world_size > 1 run several ranks a side, "
            "which cannot take turns on shared GPUs without deadlocking their collectives"
        )
    return ("interleaved" if asked == "interleaved" else "sequential"), None
