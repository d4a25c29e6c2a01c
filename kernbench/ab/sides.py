"""The sequential schedule: each side of each round is a whole `kernbench run` in a fresh
process, one after the other.

For switches that cannot share a device between live processes, and for collective
benches (several ranks a side). The side runner is injectable so the orchestration
(order, pins modes, environment, failure handling) is testable without processes; the
default starts `python -m kernbench run` with the switch set, its output in log.txt.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernbench.ab.outcomes import (
    LOG_NAME,
    STATUS_FORMAT,
    STATUS_NAME,
    SideStatus,
)
from kernbench.ab.pairing import CellPair, side_indices, twin_ids
from kernbench.ab.schedule import (
    PINS_NAME,
    AbManifest,
    SideRun,
    side_env,
    side_options,
    with_changes,
)
from kernbench.errors import EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute.cell_timers import TIMERS_NAME, record_timers
from kernbench.execute.lifetime import die_with_parent
from kernbench.execute.options import RunOptions
from kernbench.execute.pins import save_pins
from kernbench.results import atomic
from kernbench.results.ab import side_setting
from kernbench.results.jsonio import write_json
from kernbench.results.kinds import RESULTS_NAME
from kernbench.results.model import load as load_results
from kernbench.worker_env import SIDE_LOG_ENV


@dataclass(frozen=True)
class SideRequest:
    run: SideRun
    run_dir: Path
    command: list[str]
    env: dict[str, str | None]  # set on top of the parent's environment; None: removed
    log_path: Path


SideRunner = Callable[[SideRequest], int]  # runs one side, returns its exit code


def run_subprocess(request: SideRequest) -> int:
    """Run one side; it dies with this process (a kill -9 of the A/B must not leave it
    journaling into the folder that `ab --resume` clears and runs again)."""
    request.run_dir.mkdir(parents=True, exist_ok=True)
    with request.log_path.open("wb") as log:
        completed = subprocess.run(
            request.command,
            env=with_changes(os.environ, request.env),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=False,
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
    return completed.returncode


def side_command(options: RunOptions, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "kernbench", "run", *options.to_argv(run_dir)]


def execute_runs(
    folder: Path,
    manifest: AbManifest,
    bench_hash: str,
    pairs: Sequence[CellPair],
    run_side: SideRunner,
    echo: Callable[[str], None],
    rounds: Iterable[int] | None = None,
    kept: Collection[str] = (),
) -> None:
    """Run every scheduled side in order, but those `kept` (finished before an A/B was
    interrupted). Without the first run's results the pins it tunes are missing, so the
    other runs are skipped (and reported as failed). The first run to time a cell chooses
    its timer for every later run (the timers file); in an A/B of the variant, for its
    twin's runs too, so neither side is timed by a timer the other was not."""
    pins_path = folder / PINS_NAME
    if not pins_path.exists():
        # Replays need the file to exist even when nothing was tuned (plain callables).
        save_pins(pins_path, {})
    skip_reason: str | None = None
    chosen = set(rounds) if rounds is not None else None
    # Rebuilt, in schedule order, from the sides that stay (kept, or of other rounds): the
    # sides run now are timed like them, whatever sides cleared by a resume had chosen.
    timers_path = folder / TIMERS_NAME
    twins = twin_ids(pairs)
    write_json(timers_path, {})
    for run in manifest.runs:
        if run.name in kept or (chosen is not None and run.round not in chosen):
            _record_timers(timers_path, folder / run.name / RESULTS_NAME, twins)
    for run in manifest.runs:
        if chosen is not None and run.round not in chosen:
            continue
        run_dir = folder / run.name
        if run.name in kept:
            echo(f"[{run.position}/{len(manifest.runs)}] r{run.round} {run.side}: kept")
            continue
        run_dir.mkdir(parents=True, exist_ok=True)
        if skip_reason:
            atomic.write_text(run_dir / LOG_NAME, f"not run: {skip_reason}\n")
            STATUS_FORMAT.write(run_dir / STATUS_NAME, SideStatus(skipped=skip_reason))
            continue
        request = SideRequest(
            run=run,
            run_dir=run_dir,
            command=side_command(side_options(
                manifest, run, pins_path, bench_hash, timers_path,
                side_indices(pairs, manifest.switch, run.side),
            ), run_dir),
            env={**side_env(manifest, run), SIDE_LOG_ENV: str(run_dir / LOG_NAME)},
            log_path=run_dir / LOG_NAME,
        )
        # "pins auto": replays the pins that hold, tunes the rest; "pins replay": only replays.
        label = f"r{run.round} {run.side} ({side_setting(manifest.switch, run.value)}, " \
            f"pins {run.pins_mode})"
        start = time.perf_counter()
        code = run_side(request)
        wall = time.perf_counter() - start
        status = SideStatus(returncode=code, wall_s=round(wall, 3))
        STATUS_FORMAT.write(run_dir / STATUS_NAME, status)
        has_results = (run_dir / RESULTS_NAME).is_file()
        state = "ok" if code == EXIT_OK else ("no results" if not has_results else "some failed")
        echo(f"[{run.position}/{len(manifest.runs)}] {label}: {state} ({wall:.1f} s)")
        if has_results:
            _record_timers(timers_path, run_dir / RESULTS_NAME, twins)
        if run.name == manifest.runs[0].name and not has_results:
            if code == EXIT_USAGE:
                raise UserError(
                    f"the first run ({run.name}) rejected its input: {_last_line(request.log_path)}"
                    f" (log: {request.log_path})"
                )
            skip_reason = f"the first run ({run.name}), which tunes the pins, left no results"


def _record_timers(timers_path: Path, results_path: Path, twins: Mapping[str, str]) -> None:
    try:
        record_timers(timers_path, load_results(results_path), twins)
    except (UserError, OSError, ValueError):
        pass  # a side whose results cannot be read is reported by the analysis


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "no output"
