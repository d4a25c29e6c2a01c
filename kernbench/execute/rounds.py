"""The parent side of a run: rounds of worker processes, timeouts, what dies.

Each round is a fresh worker process (started with subprocess, never forked), so one
round's warm caches, allocator state and JIT choices cannot leak into the next. The
parent never runs a kernel: it starts workers, watches `current.json` for the per-cell
timeout, records what dies, and restarts a worker for the cells left. In a run over
several hosts this is the leader's side (node 0); it posts each worker it starts for
the other hosts to join (`host_channel.py`), and once the hosts fail to meet it starts no
more workers: what is left fails with the reason.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from kernbench.execute import launch
from kernbench.execute.gpus import Lane, deal, estimator
from kernbench.execute.host_channel import HostChannel, Order
from kernbench.execute.journal import (
    JournalEntry,
    current_path,
    is_journaled,
    read_current,
    read_entry,
    read_journal,
    write_entry,
)
from kernbench.execute.last_words import death, hosts_apart, log_tail
from kernbench.execute.lifetime import kill_group
from kernbench.execute.progress import Progress
from kernbench.execute.run_folder import RunFolder
from kernbench.execute.worker_task import slot_suffix, worker_env, write_task
from kernbench.plan import Cell, estimate_run, round_order
from kernbench.results.model import RoundResult
from kernbench.spec.checks import world_size_of
from kernbench.worker_env import NODE_RANK_ENV

POLL_S = 0.05


class RoundRunner:
    """Runs the pending cells of one round, restarting workers after deaths and timeouts."""

    def __init__(
        self, run: RunFolder, cells: Sequence[Cell], progress: Progress, device_model: str,
        channel: HostChannel | None = None, lanes: Sequence[Lane] = (),
    ) -> None:
        self.run_folder = run
        self.channel = channel
        self.lanes = list(lanes)  # with --gpus: one lane per GPU, a worker each per round
        self.stopping = threading.Event()
        self.spawns = 0  # workers started: their number names each multi-host rendezvous
        self.hosts_lost: str | None = None
        self.options = run.options
        self.device_model = device_model
        self.cells = cells
        self.progress = progress
        self.journal = run.journal
        self.logs = run.path / "logs"

    def pending(self, round_: int) -> list[Cell]:
        return [c for c in self.cells if not is_journaled(self.journal, round_, c.index)]

    def run(self, round_: int) -> None:
        by_world: dict[int, list[Cell]] = {}
        for cell in round_order(self.pending(round_), self.options.order_seed, round_):
            by_world.setdefault(world_size_of(cell.params), []).append(cell)
        for world_size, group in by_world.items():
            if world_size == 1 and len(self.lanes) > 1:
                self._run_dealt(round_, group)
            else:
                self._run_group(round_, world_size, group)

    def _run_dealt(self, round_: int, cells: list[Cell]) -> None:
        """One worker per GPU at once, each with its share of the round's cells, dealt by
        their time in the rounds before (the plan's estimate in the first)."""
        earlier = range(self.options.first_round, round_)
        measured = read_journal(self.journal, self.cells, earlier).rounds
        default_s = estimate_run(self.run_folder.bench, 1).seconds / self.run_folder.bench.rounds
        hands = deal(cells, estimator(measured, default_s), len(self.lanes))
        errors: list[BaseException] = []

        def lane_work(lane: Lane, hand: list[Cell]) -> None:
            try:
                self._run_group(round_, 1, hand, lane)
            except BaseException as exc:  # noqa: BLE001 - raised again in the main thread
                errors.append(exc)
                self.stopping.set()

        threads = [threading.Thread(target=lane_work, args=(lane, hand), daemon=True)
                   for lane, hand in zip(self.lanes, hands, strict=True) if hand]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        finally:
            self.stopping.set()  # on Ctrl-C: every lane kills its worker and returns
            for thread in threads:
                thread.join()
            self.stopping.clear()
        if errors:
            raise errors[0]

    def _run_group(
        self, round_: int, world_size: int, cells: list[Cell], lane: Lane | None = None
    ) -> None:
        remaining = list(cells)
        retried = False  # a worker that died before any cell: a fresh one tries once
        while remaining and not self.stopping.is_set():
            retried |= self._spawn_and_watch(round_, world_size, remaining, lane, not retried)
            remaining = [c for c in remaining if not is_journaled(self.journal, round_, c.index)]

    def _spawn_and_watch(
        self, round_: int, world_size: int, cells: list[Cell], lane: Lane | None = None,
        may_retry: bool = False,
    ) -> bool:
        """One worker for `cells`; True when it died before any cell and, `may_retry`, its
        cells were left for a fresh one."""
        if self.hosts_lost is not None:
            for cell in cells:
                self._record_failure(round_, cell, f"not run: {self.hosts_lost}")
            return False
        slot = lane.slot if lane is not None else ""
        task_path = write_task(self.run_folder, round_, cells, self.device_model, slot)
        spawn = self.spawns
        self.spawns += 1
        if self.channel is not None:
            self.channel.post(spawn, Order(
                spec_hash=self.options.spec_hash, device=self.options.device, round=round_,
                world_size=world_size, cells=[c.index for c in cells]))
        argv = launch.worker_argv(
            world_size, task_path, self.options.device, self.options.hosts, spawn
        )
        env = worker_env(self.options.device, round_, self.options.side)
        if self.options.hosts is not None:
            env[NODE_RANK_ENV] = str(self.options.hosts.node_rank)
        env.update(lane.env() if lane is not None else {})
        self.logs.mkdir(parents=True, exist_ok=True)
        log_path = self.logs / f"r{round_}{slot_suffix(slot)}.log"
        by_index = {c.index: c for c in cells}
        reported: set[int] = set()
        current_path(self.journal, round_, slot).unlink(missing_ok=True)
        timeout = self.run_folder.bench.timer.cell_timeout_s
        with open(log_path, "a") as log:
            own_output_from = log.tell()  # earlier workers of the round wrote above it
            process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            try:
                failure = self._watch(process, round_, by_index, reported, timeout, slot)
            finally:
                # Whatever the kernel forked stays in the worker's process group: it goes
                # with the worker, never outliving it to write beside the next one.
                kill_group(process)
                if self.channel is not None:
                    self.channel.ended(spawn)
        if self.stopping.is_set():
            return False  # interrupted: the cell in flight stays unmeasured, for --resume
        retry = False
        if failure is not None:
            indices, reason = failure
            for index in indices:
                self._record_failure(round_, by_index[index], reason, lane)
        elif process.returncode == launch.EXIT_RENDEZVOUS and self.options.hosts is not None:
            # A single-host worker never meets anyone: there, 4 is a kernel's own exit code.
            self.hosts_lost = hosts_apart(process.returncode,
                                          log_tail(log_path, own_output_from, 1))
            for cell in cells:
                if not is_journaled(self.journal, round_, cell.index):
                    self._record_failure(round_, cell, self.hosts_lost)
        else:
            retry = self._blame(round_, process.returncode, cells, by_index,
                                (log_path, own_output_from), lane, may_retry)
        self._report_new(round_, by_index, reported)
        return retry

    def _blame(
        self, round_: int, code: int, cells: list[Cell], by_index: dict[int, Cell],
        log: tuple[Path, int], lane: Lane | None = None, may_retry: bool = False,
    ) -> bool:
        """The worker ended with cells of its task unmeasured: the cell in flight fails
        (whatever the exit code: a kernel may end the process with `sys.exit(0)`), and a
        fresh worker takes the rest. Without one in flight, a worker killed from outside
        (the OOM killer, a stray kill) is told from one that cannot start by a fresh
        worker, once (`may_retry`, then True is returned); a second such death fails the
        cells left, as nothing would ever start them."""
        left = [c for c in cells if not is_journaled(self.journal, round_, c.index)]
        if not left:
            return False
        in_flight = read_current(self.journal, round_, lane.slot if lane is not None else "")
        if in_flight is not None and in_flight.index in by_index:
            # A multi-rank worker ends itself after a failed (journaled) cell: then
            # there is nothing to blame, and a fresh worker takes the rest.
            if not is_journaled(self.journal, round_, in_flight.index):
                # The cell's own words only: what the worker's earlier cells printed
                # concerns them.
                tail = log_tail(log[0], max(log[1], in_flight.log_from))
                self._record_failure(round_, by_index[in_flight.index], death(code, tail), lane)
            return False
        if code and may_retry:
            return True
        why = (death(code, log_tail(*log), " before the cell") if code
               else "worker finished without a result")
        for cell in left:
            self._record_failure(round_, cell, why, lane)
        return False

    def _watch(
        self,
        process: subprocess.Popen[bytes],
        round_: int,
        by_index: dict[int, Cell],
        reported: set[int],
        timeout: float,
        slot: str = "",
    ) -> tuple[list[int], str] | None:
        """The cells to fail, and why, when the worker had to be killed: a cell that ran
        past its timeout; or, a worker that never reached a cell (an import or a device's
        start-up that hangs), every cell of its task, which a fresh worker would not reach
        either."""
        last_current: int | None = None
        start_s = launch.start_timeout_s(self.options.hosts is not None)
        start_by = time.monotonic() + start_s
        while process.poll() is None and not self.stopping.is_set():
            time.sleep(POLL_S)
            self._report_new(round_, by_index, reported)
            in_flight = read_current(self.journal, round_, slot)
            if in_flight is None or in_flight.index not in by_index:
                if last_current is None and time.monotonic() > start_by:
                    kill_group(process)
                    left = [i for i in by_index if not is_journaled(self.journal, round_, i)]
                    return left, f"timeout: the worker reached no cell within {start_s:g} s"
                continue
            if in_flight.index != last_current:
                last_current = in_flight.index
                self.progress.started(f"r{round_} {in_flight.id}")
            if time.time() - in_flight.started > timeout:
                kill_group(process)
                return [in_flight.index], f"timeout: cell ran longer than {timeout:g} s"
        return None

    def _report_new(self, round_: int, by_index: dict[int, Cell], reported: set[int]) -> None:
        for index, cell in by_index.items():
            if index in reported:
                continue
            entry = read_entry(self.journal, round_, index)
            if entry is not None:
                reported.add(index)
                self.progress.finished(f"r{round_} {cell.id}", entry.result)

    def _record_failure(
        self, round_: int, cell: Cell, reason: str, lane: Lane | None = None
    ) -> None:
        result = RoundResult(
            round=round_, status="failed", reason=reason, side=self.options.side,
            gpu=lane.gpu if lane is not None else None,
        )
        write_entry(self.journal, round_, JournalEntry(index=cell.index, id=cell.id,
                                                       result=result))
        current_path(self.journal, round_, lane.slot if lane is not None else "").unlink(
            missing_ok=True)
