"""The parent side of a run: rounds of worker processes, timeouts, resume, results.

Each round is a fresh worker process (started with subprocess, never forked), so one
round's warm caches, allocator state and JIT choices cannot leak into the next. The
parent never runs a kernel: it starts workers, watches `current.json` for the per-cell
timeout, records what dies, and restarts a worker for the cells left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kernbench.errors import UserError
from kernbench.execute.worker import Task, current_path, journal_path
from kernbench.plan import Cell, plan, select, shard
from kernbench.results import provenance
from kernbench.results.jsonio import write_json
from kernbench.results.model import RoundResult
from kernbench.spec.models import Bench

POLL_S = 0.05
MANIFEST = "run.json"


@dataclass
class RunOptions:
    bench: Bench
    bench_path: Path
    out_dir: Path
    device: str
    rounds: int
    first_round: int = 1
    pins: Path | None = None  # replay (or record into) this file instead of the defaults
    pins_mode: str = "auto"
    project_pins: Path | None = None  # the pins file a user commits (benches/pins/NAME.json)
    side: str = ""
    figures: bool = True
    only: list[str] = field(default_factory=list)  # cell filters, KEY=V1[,V2]
    shard: str | None = None  # "i/n": this run measures every n-th selected cell
    extra_env: dict[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        return {
            "bench_path": str(Path(self.bench_path).resolve()),
            "device": self.device,
            "rounds": self.rounds,
            "first_round": self.first_round,
            "pins": str(self.pins) if self.pins else None,
            "pins_mode": self.pins_mode,
            "project_pins": str(self.project_pins) if self.project_pins else None,
            "side": self.side,
            "only": self.only,
            "shard": self.shard,
            "spec_hash": spec_hash(self.bench),
        }


def spec_hash(bench: Bench) -> str:
    import hashlib

    normalized = json.dumps(bench.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(normalized.encode()).hexdigest()[:16]


def utc_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Progress:
    """Reports cells as they finish: a rich bar on a terminal, plain lines otherwise."""

    def __init__(self, total: int, bench: str) -> None:
        self.total = total
        self.done = 0
        self._bar: Any = None
        if sys.stdout.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                TextColumn("{task.fields[cell]}"),
            )
            self._bar.start()
            self._task = self._bar.add_task(bench, total=total, cell="")

    def started(self, label: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, cell=label)

    def finished(self, label: str, result: RoundResult) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, cell=label)
            if result.status != "ok":
                self._bar.console.print(f"[red]failed[/red] {label}: {result.reason}")
            return
        if result.status == "ok":
            status = _format_time(result.median_s)
        else:
            status = f"FAILED {result.reason}"
        print(f"[{self.done}/{self.total}] {label}: {status}", flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _format_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


class RoundRunner:
    """Runs the pending cells of one round, restarting workers after deaths and timeouts."""

    def __init__(
        self, options: RunOptions, cells: Sequence[Cell], progress: Progress, device_model: str
    ) -> None:
        self.options = options
        self.device_model = device_model
        self.cells = cells
        self.progress = progress
        self.journal = options.out_dir / "journal"
        self.logs = options.out_dir / "logs"

    def pending(self, round_: int) -> list[Cell]:
        return [c for c in self.cells if not journal_path(self.journal, round_, c.index).exists()]

    def run(self, round_: int) -> None:
        by_world: dict[int, list[Cell]] = {}
        for cell in self.pending(round_):
            by_world.setdefault(int(cell.params.get("world_size", 1)), []).append(cell)
        for world_size, group in by_world.items():
            self._run_group(round_, world_size, group)

    def _run_group(self, round_: int, world_size: int, cells: list[Cell]) -> None:
        remaining = list(cells)
        while remaining:
            self._spawn_and_watch(round_, world_size, remaining)
            done = {c.index for c in cells if journal_path(self.journal, round_, c.index).exists()}
            remaining = [c for c in remaining if c.index not in done]

    def _task(self, round_: int, cells: list[Cell]) -> Path:
        options = self.options
        run_pins = options.out_dir / "pins.json"
        if options.pins is not None:
            read = [options.pins]
            write = [run_pins] + ([options.pins] if options.pins_mode == "record" else [])
        else:
            read = [p for p in (options.project_pins, run_pins) if p is not None]
            write = [run_pins] + ([options.project_pins] if options.project_pins else [])
        task = Task(
            bench_path=str(Path(options.bench_path).resolve()),
            round=round_,
            device=options.device,
            cells=[c.index for c in cells],
            journal_dir=str(self.journal),
            pins_read=[str(p) for p in read],
            pins_write=[str(p) for p in write],
            pins_mode=options.pins_mode,
            device_model=self.device_model,
        )
        path = options.out_dir / "tasks" / f"r{round_}.json"
        task.save(path)
        return path

    def _spawn_and_watch(self, round_: int, world_size: int, cells: list[Cell]) -> None:
        from kernbench.execute import launch

        task_path = self._task(round_, cells)
        argv = launch.worker_argv(world_size, task_path, self.options.device)
        env = {
            **os.environ,
            **launch.launch_env(self.options.device),
            **self.options.extra_env,
            "KERNBENCH_ROUND": str(round_),
            "KERNBENCH_SIDE": self.options.side,
            "PYTHONUNBUFFERED": "1",
        }
        self.logs.mkdir(parents=True, exist_ok=True)
        log_path = self.logs / f"r{round_}.log"
        by_index = {c.index: c for c in cells}
        reported: set[int] = set()
        current = current_path(self.journal, round_)
        current.unlink(missing_ok=True)
        timeout = self.options.bench.timer.cell_timeout_s
        with open(log_path, "a") as log:
            process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            try:
                failure = self._watch(process, round_, by_index, reported, current, timeout)
            except BaseException:
                _kill_group(process)
                raise
        if failure is not None:
            index, reason = failure
            self._record_failure(round_, by_index[index], reason, reported)
            return
        if process.returncode != 0:
            blamed = _current_index(current)
            tail = _log_tail(log_path)
            reason = f"worker exited with {_exit_text(process.returncode)}"
            if blamed is not None and blamed in by_index:
                # A multi-rank worker ends itself after a failed (journaled) cell: then
                # there is nothing to blame, and a fresh worker takes the rest.
                if not journal_path(self.journal, round_, blamed).exists():
                    self._record_failure(round_, by_index[blamed], f"{reason}: {tail}",
                                         reported)
            else:
                # Died before starting a cell: nothing would ever succeed; fail them all.
                for cell in cells:
                    if not journal_path(self.journal, round_, cell.index).exists():
                        self._record_failure(round_, cell, f"{reason} before the cell: {tail}",
                                             reported)
        else:
            for cell in cells:
                if not journal_path(self.journal, round_, cell.index).exists():
                    self._record_failure(round_, cell, "worker finished without a result",
                                         reported)
        self._report_new(round_, by_index, reported)

    def _watch(
        self,
        process: subprocess.Popen[bytes],
        round_: int,
        by_index: dict[int, Cell],
        reported: set[int],
        current: Path,
        timeout: float,
    ) -> tuple[int, str] | None:
        last_current: int | None = None
        while process.poll() is None:
            time.sleep(POLL_S)
            self._report_new(round_, by_index, reported)
            state = _read_json(current)
            if not state:
                continue
            index = state.get("index")
            if index != last_current and index in by_index:
                last_current = index
                self.progress.started(f"r{round_} {by_index[index].id}")
            if index in by_index and time.time() - float(state["started"]) > timeout:
                _kill_group(process)
                return index, f"timeout: cell ran longer than {timeout:g} s"
        return None

    def _report_new(self, round_: int, by_index: dict[int, Cell], reported: set[int]) -> None:
        for index, cell in by_index.items():
            if index in reported:
                continue
            entry = _read_json(journal_path(self.journal, round_, index))
            if entry:
                reported.add(index)
                result = RoundResult.model_validate(entry["result"])
                self.progress.finished(f"r{round_} {cell.id}", result)

    def _record_failure(self, round_: int, cell: Cell, reason: str, reported: set[int]) -> None:
        result = RoundResult(
            round=round_, status="failed", reason=reason, side=self.options.side
        )
        write_json(journal_path(self.journal, round_, cell.index), {
            "index": cell.index, "id": cell.id, "result": result.model_dump(mode="json"),
            "pin": None,
        })
        current_path(self.journal, round_).unlink(missing_ok=True)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _current_index(current: Path) -> int | None:
    state = _read_json(current)
    return int(state["index"]) if state and "index" in state else None


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _exit_text(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (killed: out of memory?)" if -code == signal.SIGKILL else ""
        return f"signal {name}{hint}"
    return f"exit code {code}"


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])[:400]


def execute(
    options: RunOptions,
    on_round: Callable[[int], None] | None = None,
) -> list[Cell]:
    """Run every round's pending cells; the journal holds the results."""
    options.out_dir.mkdir(parents=True, exist_ok=True)
    manifest = options.out_dir / MANIFEST
    if not manifest.exists():
        write_json(manifest, {**options.manifest(), "created_utc": utc_now()})
    cells = planned_cells(options)
    if not cells:
        raise UserError(f"{options.bench_path}: the plan for device {options.device} is empty")
    total = sum(
        1
        for round_ in range(options.first_round, options.first_round + options.rounds)
        for c in cells
        if not journal_path(options.out_dir / "journal", round_, c.index).exists()
    )
    progress = Progress(total, options.bench.name)
    runner = RoundRunner(options, cells, progress, device_model(options.device))
    try:
        for round_ in range(options.first_round, options.first_round + options.rounds):
            runner.run(round_)
            if on_round is not None:
                on_round(round_)
    finally:
        progress.close()
    return cells


def planned_cells(options: RunOptions) -> list[Cell]:
    cells = plan(options.bench, options.device)
    if options.only:
        cells = select(cells, options.only)
    return shard(cells, options.shard) if options.shard else cells


def device_model(device: str) -> str:
    if device == "cuda":
        return str(provenance.gpu_info()["gpu"])
    return provenance.cpu_model()
