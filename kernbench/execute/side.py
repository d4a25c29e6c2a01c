"""One side of an interleaved A/B round: `python -m kernbench.execute.side TASK.json`.

A side is a fresh process with its own environment (its value of the switch) that holds
the round's cells and times them only when the parent says so, one turn at a time, so
the sides of a round take turns on the device and a cell's A and B turns are
milliseconds apart. The parent writes one JSON request per line on stdin; the side
answers each with one JSON line on the pipe that was its stdout (everything else the
process prints, from Python or from C libraries, goes to its log on stderr).

Requests: `prepare` a cell (build, check, tune or replay its pin, warm up, estimate one
call), take a `turn` of it (a timed batch of `calls`), `finish` it (its journal entry:
every turn's samples), `exit`. The journal is the same as a worker's, so the side's
folder becomes a results.json like any run's.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kernbench.execute import pins as pinning
from kernbench.execute.autotune_pins import AutotunePins
from kernbench.execute.call_wall import ESTIMATE_CALLS, estimate_call_wall
from kernbench.execute.journal import TASK, JournalEntry, Task, write_entry
from kernbench.execute.lifetime import die_with_runner
from kernbench.execute.progress import note
from kernbench.execute.worker import CellRunner, fail, record
from kernbench.kernels.base import Kernel
from kernbench.plan import Cell, plan
from kernbench.results.model import NOT_TIMED, RoundResult
from kernbench.spec.loader import load_bench
from kernbench.spec.op_factory import bench_factory
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import Timer, choose_timer
from kernbench.timing.base import Measurement
from kernbench.units import counted


@dataclass
class Held:
    """A prepared cell: its kernel, its timer and what its turns measured so far."""

    cell: Cell
    kernel: Kernel
    timer: Timer
    result: RoundResult
    started: float
    samples_s: list[float] = field(default_factory=list)
    turn_medians_s: list[float] = field(default_factory=list)
    sm_clock_mhz: list[float] = field(default_factory=list)
    throttled: list[bool] = field(default_factory=list)
    settle: dict[str, Any] | None = None


def turn_spec(spec: TimerSpec, calls: int) -> TimerSpec:
    """Exactly `calls` samples, no warm-up beyond the timer's one untimed call and no
    settle phase: a turn lasts milliseconds between the other sides' turns, which keep
    the device warm (a settle of up to `settle_s` a turn made one cell's A/B 70 s)."""
    calls = max(calls, 3)
    return spec.model_copy(update={
        "warmup_s": 0.0, "settle_s": 0.0, "min_samples": calls, "max_samples": calls,
        "budget_s": 1e9, "rel_ci": 1e-12,
    })


class Side:
    def __init__(self, task: Task) -> None:
        # Resolved before any kernel runs: a kernel may change the directory (os.chdir).
        bench_path = Path(task.bench_path).resolve()
        self.journal = Path(task.journal_dir).resolve()
        bench = load_bench(bench_path)
        self.task = task
        self.spec = bench.timer
        self.cells = plan(bench, task.device)
        self.store = pinning.PinStore(
            read=[Path(p).resolve() for p in task.pins_read],
            write=[Path(p).resolve() for p in task.pins_write],
        )
        self.runner = CellRunner(
            bench_factory(bench, bench_path.parent), bench.kernel_name,
            pinning.bench_source_hash(bench, bench_path.parent), bench.timer,
            self.store, task.pins_mode, task.device, task.device_model,
            AutotunePins(self.store, task.pins_mode, task.device_model) if bench.op else None,
        )
        self.held: dict[int, Held] = {}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "prepare":
            return self.prepare(int(request["cell"]), request.get("timer"))
        if op == "turn":
            return self.turn(int(request["cell"]), int(request["calls"]),
                             keep=bool(request.get("keep", True)))
        if op == "finish":
            return self.finish(int(request["cell"]), request.get("reason"))
        return {"ok": False, "reason": f"unknown request {op!r}"}

    def prepare(self, index: int, timer_kind: str | None = None) -> dict[str, Any]:
        """Build, check, tune or replay, warm up and estimate the cell; `timer_kind`: the
        timer the A/B already chose for it (a name of `spec.timer_model.TIMERS`), else the
        bench's `timer.kind`."""
        cell = self.cells[index]
        started = time.perf_counter()
        kernel, result = self.runner.prepare(cell, self.task.round)
        if kernel is None:
            self.runner.note_autotune(result)
            self._journal(cell, result, started)
            return {"ok": False, "reason": result.reason}
        try:
            timer = choose_timer(kernel, self.spec, self.task.device, timer_kind)
            estimate_spec = turn_spec(self.spec, ESTIMATE_CALLS).model_copy(
                update={"warmup_s": self.spec.warmup_s, "settle_s": self.spec.settle_s}
            )
            warm = timer.measure(kernel, estimate_spec)
            # What a call adds to a turn's wall time: a graph-timed sample replays hundreds
            # of launches, each behind its own L2 flush, and a host-bound op's launch can
            # take 20 times its kernel; turns are sized by this.
            wall = estimate_call_wall(lambda calls: self._timed_turn(timer, kernel, calls))
        except Exception as exc:  # noqa: BLE001 - a failing cell is recorded, the side goes on
            self.runner.note_autotune(result)
            fail(result, exc)
            self.runner.release(kernel)
            self._journal(cell, result, started)
            return {"ok": False, "reason": result.reason}
        self.runner.note_autotune(result)
        self.held[index] = Held(cell, kernel, timer, result, started, settle=warm.settle)
        result.warmup_calls = sum(m.warmup_calls + len(m.samples_s)
                                  for m in (warm, *wall.measured))
        note(f"prepared {cell.id}: {warm.timer} timer, {statistics.median(warm.samples_s):.3g} s"
            f" a sample, {wall.per_call_s:.3g} s a call's wall time in a turn,"
            f" {wall.own_s:.3g} s a turn's own, {time.perf_counter() - started:.1f} s to prepare")
        return {"ok": True, "wall_per_call_s": wall.per_call_s, "timer": warm.timer}

    def _timed_turn(self, timer: Timer, kernel: Kernel, calls: int) -> tuple[float, Measurement]:
        """A turn of `calls` calls, and the wall time it took."""
        began = time.perf_counter()
        measured = timer.measure(kernel, turn_spec(self.spec, calls))
        return time.perf_counter() - began, measured

    def turn(self, index: int, calls: int, keep: bool = True) -> dict[str, Any]:
        """Time `calls` calls now; `keep`: count them in the cell's samples (a warm-up turn
        does not)."""
        held = self.held.get(index)
        if held is None:
            return {"ok": False, "reason": f"cell {index} is not prepared"}
        try:
            measured = held.timer.measure(held.kernel, turn_spec(self.spec, calls))
        except Exception as exc:  # noqa: BLE001
            fail(held.result, exc)
            return {"ok": False, "reason": held.result.reason}
        median = statistics.median(measured.samples_s)
        if not keep:
            return {"ok": True, "median_s": median, "n": len(measured.samples_s)}
        held.samples_s += measured.samples_s
        held.turn_medians_s.append(median)
        held.sm_clock_mhz += measured.sm_clock_mhz
        held.throttled += measured.throttled
        if not held.result.timer:
            warmup_calls = held.result.warmup_calls  # the preparing measurements'
            record(held.result, measured, held.kernel)
            held.result.settle = held.settle  # the cell settled once, while prepared
            held.result.warmup_calls = warmup_calls
        return {"ok": True, "median_s": median, "n": len(measured.samples_s)}

    def finish(self, index: int, reason: str | None = None) -> dict[str, Any]:
        """Journal the cell: every turn's samples, or why it was not timed (`reason`, from
        the parent: another side's failure)."""
        held = self.held.pop(index, None)
        if held is None:
            return {"ok": True}
        result = held.result
        if result.status == "ok":
            result.samples_s = held.samples_s
            result.sm_clock_mhz = held.sm_clock_mhz
            result.throttled = held.throttled
            result.stop_reason = "turns"
            result.median_s = statistics.median(held.samples_s) if held.samples_s else None
            result.extra["turn_medians_s"] = held.turn_medians_s
            if not held.samples_s:
                result.status = "failed"
                result.reason = f"{NOT_TIMED}{reason}" if reason else "no turns taken"
        self.runner.release(held.kernel)
        note(f"finished {held.cell.id}: {counted(len(held.turn_medians_s), 'turn')},"
            f" {counted(len(held.samples_s), 'sample')}, {time.perf_counter() - held.started:.1f} s"
            " since prepared")
        self._journal(held.cell, result, held.started)
        return {"ok": result.status == "ok", "reason": result.reason}

    def _journal(self, cell: Cell, result: RoundResult, started: float) -> None:
        result.wall_s = time.perf_counter() - started
        pin = self.store.used.get(result.pin) if result.pin else None
        write_entry(self.journal, self.task.round,
                    JournalEntry(index=cell.index, id=cell.id, result=result, pin=pin))


def serve(side: Side, requests: Iterable[str], replies: IO[str]) -> None:
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        replies.write(json.dumps(side.handle(request)) + "\n")
        replies.flush()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m kernbench.execute.side TASK.json", file=sys.stderr)
        return 2
    die_with_runner()  # the A/B runner named in the environment (`parent_env`)
    # The protocol keeps the original stdout; fd 1 then points at the log (stderr), so
    # a library that prints cannot corrupt a reply.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    task = TASK.read(Path(args[0]))
    side = Side(task)
    replies.write(json.dumps({"ok": True, "ready": True, "cells": len(side.cells)}) + "\n")
    replies.flush()
    serve(side, sys.stdin, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
