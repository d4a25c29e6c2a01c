"""`kernbench ab`: run each side of each round as a fresh `kernbench run`, then analyze.

The side runner is injectable so the orchestration (order, pins modes, environment,
failure handling) is testable without processes; the default starts
`python -m kernbench run` with the switch set and its output in the run's log.txt.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.ab.analysis import AbReport
from kernbench.ab.outcomes import (
    LOG_NAME,
    RESULTS_NAME,
    STATUS_FORMAT,
    STATUS_NAME,
    SideStatus,
)
from kernbench.ab.outputs import summarize_ab
from kernbench.ab.schedule import AbManifest, SideRun, save_manifest, schedule
from kernbench.ab.switch_check import switch_warning
from kernbench.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute.options import RunOptions
from kernbench.execute.pins import save_pins
from kernbench.kernels import kernel_source_path
from kernbench.plan import plan
from kernbench.results.provenance import utc_now, utc_stamp
from kernbench.spec.discovery import find_bench
from kernbench.spec.hardware import resolve_device
from kernbench.spec.models import AbSpec, Bench, spec_hash

PINS_NAME = "pins.json"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class SideRequest:
    run: SideRun
    run_dir: Path
    command: list[str]
    env: dict[str, str]  # set on top of the parent's environment
    log_path: Path


SideRunner = Callable[[SideRequest], int]  # runs one side, returns its exit code


@dataclass(frozen=True)
class AbOutcome:
    folder: Path
    report: AbReport
    exit_code: int  # 0, or 1 when some variant failed


def run_subprocess(request: SideRequest) -> int:
    request.run_dir.mkdir(parents=True, exist_ok=True)
    with request.log_path.open("wb") as log:
        completed = subprocess.run(
            request.command,
            env={**os.environ, **request.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    return completed.returncode


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def resolve_settings(
    bench: Bench,
    switch: str | None = None,
    a: str | None = None,
    b: str | None = None,
    rounds: int | None = None,
    aa: bool | None = None,
    min_effect: float | None = None,
) -> AbSpec:
    """Command-line values over the bench's `ab:` block over the defaults."""
    block = bench.ab
    switch = switch or (block.switch if block else None)
    if not switch:
        raise UserError(
            f"--switch: bench {bench.name!r} has no ab: block naming a switch; give --switch VAR"
        )
    if not _ENV_NAME.match(switch):
        raise UserError(f"--switch: {switch!r} is not an environment variable name")
    defaults = block or AbSpec(switch=switch)
    chosen: dict[str, Any] = {
        "switch": switch,
        "a": defaults.a if a is None else a,
        "b": defaults.b if b is None else b,
        "rounds": defaults.rounds if rounds is None else rounds,
        "aa": defaults.aa if aa is None else aa,
        "min_effect": defaults.min_effect if min_effect is None else min_effect,
    }
    if chosen["a"] == chosen["b"]:
        raise UserError(f"--a/--b: both sides would set {switch}={chosen['a']}")
    if not 2 <= chosen["rounds"] <= 100:
        raise UserError(f"--rounds: {chosen['rounds']}: give 2 to 100 (6 is the default)")
    if chosen["min_effect"] < 0:
        raise UserError(f"--min-effect: {chosen['min_effect']}: must not be negative")
    return AbSpec(**chosen)


def side_options(
    manifest: AbManifest, run: SideRun, pins_path: Path, bench_hash: str
) -> RunOptions:
    """One side's run: its one round, numbered as in the schedule, on the shared pins."""
    return RunOptions(
        bench_path=Path(manifest.bench_path),
        spec_hash=bench_hash,
        device=manifest.device,
        rounds=1,
        first_round=run.round,
        pins=pins_path,
        pins_mode=run.pins_mode,
        side=side_name(run),
        figures=False,
    )


def side_command(options: RunOptions, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "kernbench", "run", *options.to_argv(run_dir)]


def side_name(run: SideRun) -> str:
    # A/A sides are A sides: a kernel that branches on KERNBENCH_SIDE sees "A".
    return "B" if run.side == "B" else "A"


def side_env(manifest: AbManifest, run: SideRun) -> dict[str, str]:
    # KERNBENCH_SWITCH names the switch, so each side's provenance records its value.
    return {
        manifest.switch: run.value,
        "KERNBENCH_SWITCH": manifest.switch,
        "KERNBENCH_SIDE": side_name(run),
        "KERNBENCH_ROUND": str(run.round),
    }


def run_ab(
    bench: str,
    *,
    switch: str | None = None,
    a: str | None = None,
    b: str | None = None,
    rounds: int | None = None,
    aa: bool | None = None,
    min_effect: float | None = None,
    out: Path | None = None,
    device: str = "auto",
    bench_dirs: Sequence[Path] = (),
    run_side: SideRunner = run_subprocess,
    echo: Callable[[str], None] = _stderr,
) -> AbOutcome:
    """Run an A/B of `switch` on `bench` and write ab.json, report.md and ab.png.

    Options left None come from the bench's `ab:` block, then the defaults."""
    spec, bench_path = find_bench(bench, bench_dirs)
    settings = resolve_settings(spec, switch, a, b, rounds, aa, min_effect)
    device = resolve_device(device)
    cells = plan(spec, device)
    if not cells:
        raise UserError(f"{bench_path}: the plan for device {device} is empty")
    folder = Path(out) if out else Path("runs") / f"ab_{settings.switch}_{utc_stamp()}"
    if folder.exists() and any(folder.iterdir()):
        raise UserError(f"--out: {folder} is not empty; give a new folder")

    warning = switch_warning(
        settings.switch, spec.kernel, kernel_source_path(spec.kernel, bench_path.parent)
    )
    if warning:
        echo(warning)

    manifest = AbManifest(
        bench=spec.name,
        bench_path=str(Path(bench_path).resolve()),
        bench_dirs=[str(Path(d).resolve()) for d in bench_dirs],
        device=device,
        switch=settings.switch,
        a=settings.a,
        b=settings.b,
        rounds=settings.rounds,
        aa=settings.aa,
        min_effect=settings.min_effect,
        variants=list(dict.fromkeys(cell.variant for cell in cells)),
        created_utc=utc_now(),
        runs=schedule(settings.rounds, settings.a, settings.b, settings.aa),
    )
    folder.mkdir(parents=True, exist_ok=True)
    save_manifest(folder, manifest)
    execute_runs(folder, manifest, spec_hash(spec), run_side, echo)
    report = summarize_ab(folder)
    for variant, failed in report.failed_variants.items():
        echo(f"failed: {variant} in round(s) {', '.join(map(str, failed))}; no verdicts")
    echo(f"A/B report: {folder / 'report.md'}")
    return AbOutcome(folder, report, EXIT_FAILED if report.failed_variants else EXIT_OK)


def execute_runs(
    folder: Path,
    manifest: AbManifest,
    bench_hash: str,
    run_side: SideRunner,
    echo: Callable[[str], None],
) -> None:
    """Run every scheduled side in order. Without the first run's results the pins it
    records are missing, so the other runs are skipped (and reported as failed)."""
    pins_path = folder / PINS_NAME
    # Replays need the file to exist even when nothing was tuned (plain callables).
    save_pins(pins_path, {})
    skip_reason: str | None = None
    for run in manifest.runs:
        run_dir = folder / run.name
        run_dir.mkdir(parents=True, exist_ok=True)
        if skip_reason:
            (run_dir / LOG_NAME).write_text(f"not run: {skip_reason}\n")
            STATUS_FORMAT.write(run_dir / STATUS_NAME, SideStatus(skipped=skip_reason))
            continue
        request = SideRequest(
            run=run,
            run_dir=run_dir,
            command=side_command(side_options(manifest, run, pins_path, bench_hash), run_dir),
            env=side_env(manifest, run),
            log_path=run_dir / LOG_NAME,
        )
        label = f"r{run.round} {run.side} ({manifest.switch}={run.value}, {run.pins_mode})"
        start = time.perf_counter()
        code = run_side(request)
        wall = time.perf_counter() - start
        status = SideStatus(returncode=code, wall_s=round(wall, 3))
        STATUS_FORMAT.write(run_dir / STATUS_NAME, status)
        has_results = (run_dir / RESULTS_NAME).is_file()
        state = "ok" if code == EXIT_OK else ("no results" if not has_results else "some failed")
        echo(f"[{run.position}/{len(manifest.runs)}] {label}: {state} ({wall:.1f} s)")
        if run.pins_mode == "record" and not has_results:
            if code == EXIT_USAGE:
                raise UserError(
                    f"the first run ({run.name}) rejected its input: {_last_line(request.log_path)}"
                    f" (log: {request.log_path})"
                )
            skip_reason = f"the first run ({run.name}), which records the pins, left no results"


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "no output"
