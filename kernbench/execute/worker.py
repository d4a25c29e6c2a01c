"""The worker process: `python -m kernbench.execute.worker TASK.json`.

A worker runs some cells of one round and journals each finished cell atomically, so a
crash, a timeout or a kill -9 loses at most the cell in flight. Before each cell it
writes `current.json`, which tells the parent what to blame and when to time out.
Under a multi-rank launcher every rank runs the same cells; only one (`is_primary_rank`)
writes.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kernbench.execute import pins as pinning
from kernbench.execute.autotune_pins import AutotunePins, install_if_loaded
from kernbench.execute.gpus import worker_gpu
from kernbench.execute.journal import (
    TASK,
    CurrentCell,
    JournalEntry,
    Task,
    current_path,
    finished_line,
    write_current,
    write_entry,
)
from kernbench.execute.last_words import log_reach
from kernbench.execute.lifetime import die_with_runner
from kernbench.execute.turns import TurnsHooks, Visit, run_in_turns
from kernbench.kernels.base import Kernel, TuneReport, as_kernel, check_result
from kernbench.kernels.failure import one_line, raised_at
from kernbench.plan import Cell, plan
from kernbench.results.model import Check, RoundResult
from kernbench.spec.loader import load_bench
from kernbench.spec.op_factory import bench_factory
from kernbench.spec.timer_model import MIN_SAMPLES, TIMERS, TimerSpec
from kernbench.timing import choose_timer
from kernbench.worker_env import NODE_RANK_ENV, SIDE_ENV

EXIT_GROUP_BROKEN = 3
# Tuning times each candidate with a share of the cell's budget.
TUNE_BUDGET_SHARE = 0.25


def is_primary_rank() -> bool:
    """The rank that journals: rank 0, or, over several hosts, the leader's first rank
    (the rendezvous numbers the hosts as they join, not by their --node-rank)."""
    if NODE_RANK_ENV in os.environ:
        return os.environ[NODE_RANK_ENV] == "0" and os.environ.get("LOCAL_RANK", "0") == "0"
    return int(os.environ.get("RANK", "0")) == 0


class CellRunner:
    """Builds, checks, tunes (or replays) and times one cell."""

    def __init__(
        self,
        factory: Callable[..., Any],
        kernel_name: str,
        source: str | None,
        timer_spec: TimerSpec,
        store: pinning.PinStore,
        pins_mode: str,
        device: str,
        device_model: str,
        autotune: AutotunePins | None = None,
        timers: Mapping[int, str] | None = None,
    ) -> None:
        self.factory = factory
        self.autotune = autotune
        self.kernel_name = kernel_name
        self.source = source
        self.timer_spec = timer_spec
        self.store = store
        self.pins_mode = pins_mode
        self.device = device
        self.device_model = device_model
        # Each cell's timer (a TIMERS name) once one of its measurements chose it, or an
        # earlier round did (`timers`): auto decides by one eager estimate, which can fall
        # either side of its threshold, and a cell's rounds and turns must not mix timers.
        self.timers = dict(timers or {})
        self._held: dict[int, int] = {}  # id() of a prepared cell's kernel -> its index

    def run(self, cell: Cell, round_: int) -> RoundResult:
        started = time.perf_counter()
        kernel, result = self.prepare(cell, round_)
        if kernel is not None:
            try:
                record(result, self._measure(kernel), kernel)
            except Exception as exc:  # noqa: BLE001 - any failure of a cell is recorded
                fail(result, exc)
            finally:
                self.release(kernel)
        self.note_autotune(result)
        result.wall_s = time.perf_counter() - started
        return result

    def prepare(self, cell: Cell, round_: int) -> tuple[Kernel | None, RoundResult]:
        """Build, check and tune (or replay) a cell: the kernel ready to time, or None and
        the result failed with its reason."""
        result = RoundResult(round=round_, status="ok", side=os.environ.get(SIDE_ENV, ""))
        kernel: Kernel | None = None
        try:
            kernel = as_kernel(self.factory(**cell.params), self.factory)
            if self.autotune is not None:
                # the factory may have loaded Triton (a backend's library): its tuners
                # are pinned from their first call, the check's
                install_if_loaded(self.autotune)
            _check(kernel, result)
            if kernel.tunable:
                parent_check = kernel.check
                kernel = self._tuned(kernel, cell, result)
                if kernel.check is not parent_check:
                    _check(kernel, result)  # the chosen config's own check: what is timed
            self._held[id(kernel)] = cell.index
            return kernel, result
        except Exception as exc:  # noqa: BLE001 - any failure of a cell is recorded
            fail(result, exc)
            if kernel is not None:
                close(kernel)
            return None, result

    def turns_hooks(
        self,
        round_: int,
        journal: Callable[[Cell, RoundResult], None],
        current: Callable[[Cell], None],
    ) -> TurnsHooks:
        """This runner's steps for a round in turns (execute/turns.py)."""

        def prepare(cell: Cell) -> tuple[Kernel | None, RoundResult]:
            kernel, result = self.prepare(cell, round_)
            self.note_autotune(result)
            return kernel, result

        def finish(visit: Visit, measured: Any, error: BaseException | None) -> None:
            try:
                if error is not None:
                    raise error
                record(visit.result, measured, visit.kernel)
            except Exception as exc:  # noqa: BLE001 - any failure of a cell is recorded
                fail(visit.result, exc)
            finally:
                self.release(visit.kernel)

        return TurnsHooks(prepare, self._measure, finish, journal, current)

    def note_autotune(self, result: RoundResult) -> None:
        """The Triton tuners' pins recorded or replayed for this cell, into its result."""
        actions = self.autotune.take_actions() if self.autotune is not None else {}
        if actions:
            result.extra.setdefault("autotune_pins", {}).update(actions)

    def release(self, kernel: Kernel) -> None:
        """Close a prepared cell's kernel; its timer stays chosen for the cell."""
        self._held.pop(id(kernel), None)
        close(kernel)

    def _measure(self, kernel: Kernel, spec: TimerSpec | None = None) -> Any:
        spec = spec or self.timer_spec
        if kernel.measure is not None:
            return kernel.measure(spec)
        index = self._held.get(id(kernel))  # None: an autotune candidate
        chosen = self.timers.get(index) if index is not None else None
        measured = choose_timer(kernel, spec, self.device, chosen).measure(kernel, spec)
        if index is not None and measured.timer in TIMERS:
            self.timers.setdefault(index, measured.timer)
        return measured

    def _tuned(self, kernel: Kernel, cell: Cell, result: RoundResult) -> Kernel:
        key = pinning.pin_key(self.kernel_name, self.device_model, cell.params)
        # A kernel that names its own source hash (what its choice among configs depends on)
        # is fingerprinted by that alone: editing the rest of its factory's file (the gemm
        # dispatcher) leaves its pins valid (ADR 0066).
        own = kernel.info.get("source_hash")
        source = str(own) if own else self.source
        current = pinning.fingerprint(self.kernel_name, source, self.device_model)
        result.pin = key
        if self.pins_mode != "record":
            found = self.store.lookup(key, current)
            if found.pin is not None:
                result.pin_action = "replayed"
                return self._build(kernel, found.pin["winner"])
            if found.stale is not None:
                message = found.describe_stale(current)
                if self.pins_mode == "replay":
                    raise RuntimeError(f"{message}; re-record the pins")
                result.extra["stale_pin"] = message
            elif self.pins_mode == "replay":
                raise RuntimeError(f"no pin for this cell in {self.store.read_paths}")
        report = self._tune(kernel)
        self.store.record(key, current, report.winner, report.candidates)
        result.pin_action = "stale-retuned" if "stale_pin" in result.extra else "recorded"
        return self._build(kernel, report.winner)

    def _tune(self, kernel: Kernel) -> TuneReport:
        if kernel.self_tune is not None:
            return kernel.self_tune()
        spec = self.timer_spec.model_copy(
            update={"budget_s": self.timer_spec.budget_s * TUNE_BUDGET_SHARE,
                    "min_samples": MIN_SAMPLES}
        )
        candidates = []
        for config in kernel.configs:
            candidate = self._build(kernel, config)
            try:
                samples = self._measure(candidate, spec).samples_s
                time_s = statistics.median(samples)
                candidates.append({"config": dict(config), "time_s": time_s})
            except Exception as exc:  # noqa: BLE001 - a config that fails is not a winner
                candidates.append({"config": dict(config), "time_s": None, "error": one_line(exc)})
            finally:
                if candidate.close is not None:
                    candidate.close()
        timed = [c for c in candidates if c["time_s"] is not None]
        if not timed:
            raise RuntimeError("every autotune candidate failed")
        winner = min(timed, key=lambda c: c["time_s"])["config"]
        return TuneReport(winner=winner, candidates=candidates)

    @staticmethod
    def _build(kernel: Kernel, config: Mapping[str, Any]) -> Kernel:
        assert kernel.build is not None
        built = as_kernel(kernel.build(config), kernel.build)
        if built.check is None:
            built.check = kernel.check
        built.info = {**kernel.info, **built.info, "pinned_config": dict(config)}
        return built


class WrongResult(AssertionError):
    pass


def _check(kernel: Kernel, result: RoundResult) -> None:
    """Run the kernel's check, if it has one, into `result`; a wrong result raises."""
    if kernel.check is None:
        return
    check = check_result(kernel.check(), kernel.check)
    result.check = Check(rel_err=check.rel_err, tolerance=check.tolerance, ok=check.ok)
    if not check.ok:
        raise WrongResult(
            f"wrong result: relative error {check.rel_err:.3g} "
            f"exceeds tolerance {check.tolerance:.3g}"
        )


def record(result: RoundResult, measurement: Any, kernel: Kernel) -> None:
    """A measurement's samples and what the kernel says of itself, into its round result."""
    result.timer = measurement.timer
    result.samples_s = measurement.samples_s
    result.warmup_calls = measurement.warmup_calls
    result.stop_reason = measurement.stop_reason
    result.stages_s = measurement.stages_s
    result.sm_clock_mhz = measurement.sm_clock_mhz
    result.throttled = measurement.throttled
    result.duty = measurement.duty
    result.settle = measurement.settle
    result.blocks = measurement.blocks
    result.extra.update({**measurement.extra, **_jsonable(kernel.info)})
    if kernel.tile:
        result.extra["tile"] = list(kernel.tile)
    if measurement.samples_s:
        result.median_s = statistics.median(measurement.samples_s)


def fail(result: RoundResult, exc: BaseException) -> None:
    result.status = "failed"
    if isinstance(exc, WrongResult):
        result.reason = str(exc)
        return
    result.reason = one_line(exc, raised_at(exc))
    result.extra["traceback"] = traceback.format_exc(limit=8)


def close(kernel: Kernel) -> None:
    if kernel.close is not None:
        try:
            kernel.close()
        except Exception:  # noqa: BLE001 - cleanup must not mask the result
            pass


def _jsonable(info: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(dict(info), default=str))


def run_task(task: Task) -> None:
    # Resolved before any kernel runs: a kernel may change the directory (os.chdir).
    bench_path = Path(task.bench_path).resolve()
    bench = load_bench(bench_path)
    cells = plan(bench, task.device)
    factory = bench_factory(bench, bench_path.parent)
    source = pinning.bench_source_hash(bench, bench_path.parent)
    primary = is_primary_rank()
    store = pinning.PinStore(
        read=[Path(p).resolve() for p in task.pins_read],
        write=[Path(p).resolve() for p in task.pins_write] if primary else [],
    )
    # An op bench runs library kernels whose Triton tuners kernbench pins (ADR 0062).
    autotune = AutotunePins(store, task.pins_mode, task.device_model) if bench.op else None
    runner = CellRunner(
        factory, bench.kernel_name, source, bench.timer, store, task.pins_mode,
        task.device, task.device_model, autotune, task.timers,
    )
    journal = Path(task.journal_dir).resolve()
    gpu = worker_gpu()
    _preload(task.device)

    def current(cell: Cell) -> None:
        if primary:
            write_current(journal, task.round,
                          CurrentCell(index=cell.index, id=cell.id, started=time.time(),
                                      log_from=log_reach()),
                          task.slot)

    def done(cell: Cell, result: RoundResult) -> None:
        result.gpu = gpu
        if primary:
            pin = store.used.get(result.pin) if result.pin else None
            write_entry(journal, task.round,
                        JournalEntry(index=cell.index, id=cell.id, result=result, pin=pin))
            print(finished_line(task.round, cell.id, result.status, result.reason), flush=True)
        if result.status != "ok" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
            # A failure in one rank can leave the process group broken for the next cell
            # (a peer gone, a collective half done): end this group; the runner starts a
            # fresh one for the cells left.
            sys.exit(EXIT_GROUP_BROKEN)

    mine = [cells[index] for index in task.cells]
    if bench.timer.turns > 1:
        run_in_turns(mine, bench.timer, runner.turns_hooks(task.round, done, current))
    else:
        for cell in mine:
            current(cell)
            done(cell, runner.run(cell, task.round))
    if primary:
        current_path(journal, task.round, task.slot).unlink(missing_ok=True)


def _preload(device: str) -> None:
    """Initialize CUDA now (the timers and scipy came with the module's imports), so the
    first cell's timeout and wall time do not pay for it."""
    if device == "cuda":
        import torch

        torch.cuda.init()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m kernbench.execute.worker TASK.json", file=sys.stderr)
        return 2
    if "LOCAL_RANK" not in os.environ:  # ranks under the launcher die with its agent
        die_with_runner()
    run_task(TASK.read(Path(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
