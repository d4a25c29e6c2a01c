"""The interleaved schedule: in each round the sides live side by side and take turns.

Per round, one fresh `python -m kernbench.execute.side` process per side (A, B and, with
A/A, A' as AA1), each with its own environment and its own run folder, started together.
For each cell in plan order: A prepares it first (in round 1 it tunes the pin the A/B's
pins file lacks, which the other sides then replay), then the others; then the sides
take their turns in the order `interleave.turn_order` gives. (In an A/B of the variant
a cell is a pair, and each side prepares and times its own variant's cell of it:
`ab.pairing`.) The parent asks one side for a turn and waits for its answer before
asking the next, so only one side runs at a time; each turn's start and end are kept. A
side that dies, or gives no answer within the cell timeout, is killed: its cells fail
from there on (its variant gets no verdict), the other sides go on.
"""

from __future__ import annotations

import json
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

from kernbench.ab.interleave import (
    TARGET_TURN_S,
    cell_pairs,
    plan_turns,
    round_delta,
    turn_order,
)
from kernbench.ab.outcomes import LOG_NAME, STATUS_FORMAT, STATUS_NAME, SideStatus, turns_path
from kernbench.ab.pairing import CellPair, side_cells, side_indices
from kernbench.ab.schedule import (
    PINS_NAME,
    AbManifest,
    SideRun,
    side_env,
    side_options,
    start_order,
    with_changes,
)
from kernbench.ab.verdicts import to_pct
from kernbench.execute.finish import build_run_results
from kernbench.execute.journal import JournalEntry, is_journaled, write_entry
from kernbench.execute.last_words import exit_text  # `run`'s words for an exit
from kernbench.execute.launch import START_TIMEOUT_S
from kernbench.execute.lifetime import kill_group
from kernbench.execute.options import save_options
from kernbench.execute.pins import save_pins
from kernbench.execute.run_folder import RunFolder
from kernbench.execute.worker_task import child_env, write_task
from kernbench.plan import Cell
from kernbench.results.ab import TURNS_FORMAT, CellTurns, RoundTurns
from kernbench.results.model import RoundResult
from kernbench.results.provenance import device_model
from kernbench.spec.models import Bench, spec_hash
from kernbench.spec.timer_model import TimerSpec
from kernbench.units import counted, signed_pct

SIDE_MODULE = "kernbench.execute.side"
EXIT_WAIT_S = 30.0


@dataclass
class LiveSide:
    """A side process and the pipe the parent talks to it through."""

    run: SideRun
    folder: RunFolder
    process: subprocess.Popen[str]
    log: IO[bytes]
    gone: str | None = None  # why the side can no longer answer

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        """Send one request and wait for its answer; None once the side is gone."""
        if self.gone is None and request.get("op") != "ready":
            assert self.process.stdin is not None
            try:
                self.process.stdin.write(json.dumps(request) + "\n")
                self.process.stdin.flush()
            except OSError:
                self._lose("its pipe closed")
        return self.answer(timeout_s)

    def answer(self, timeout_s: float) -> dict[str, Any] | None:
        if self.gone is not None:
            return None
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout_s)
        if not ready:
            self._lose(f"no answer within {timeout_s:g} s (killed)")
            return None
        try:
            line = self.process.stdout.readline()
        except UnicodeDecodeError:
            self._lose("answered bytes that are not UTF-8 (killed)")
            return None
        if not line:
            self.process.wait()
            self._lose(f"exited with {exit_text(self.process.returncode)}")
            return None
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            # Something else wrote to the protocol's pipe (a kernel's print, say): the
            # side's answers can no longer be told apart, so the side is lost.
            self._lose(f"answered {line.strip()[:80]!r}, not a JSON object (killed)")
            return None
        return reply

    def close(self) -> int:
        """Ask the side to exit; kill it if it does not. Its exit code."""
        if self.gone is None and self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps({"op": "exit"}) + "\n")
                self.process.stdin.close()
                self.process.wait(EXIT_WAIT_S)
            except (OSError, subprocess.TimeoutExpired):
                kill_group(self.process)
        elif self.process.poll() is None:
            kill_group(self.process)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:  # a broken pipe to a dead side has nothing left to flush
                    pass
        self.log.close()
        code = int(self.process.wait())
        kill_group(self.process)  # what the side's kernels forked goes with it
        return code

    def _lose(self, reason: str) -> None:
        self.gone = reason
        kill_group(self.process)


def side_process_env(changes: Mapping[str, str | None]) -> dict[str, str]:
    """A side's environment: this one with the side's `changes` (`schedule.side_env`),
    set up as a worker's is (`worker_task.child_env`)."""
    return child_env(with_changes(os.environ, changes))


def start_side(
    folder: Path, manifest: AbManifest, run: SideRun, bench: Bench, pairs: Sequence[CellPair],
    pins_path: Path, device_model: str,
) -> LiveSide:
    options = side_options(manifest, run, pins_path, spec_hash(bench), cells=side_indices(
        pairs, manifest.switch, run.side))
    run_folder = RunFolder(options, bench, Path(folder) / run.name)
    run_folder.path.mkdir(parents=True, exist_ok=True)
    save_options(run_folder.path, options)
    task = write_task(run_folder, run.round, side_cells(pairs, run.side), device_model)
    return spawn_side([sys.executable, "-m", SIDE_MODULE, str(task)], run, run_folder,
                      side_process_env(side_env(manifest, run)))


def spawn_side(command: Sequence[str], run: SideRun, folder: RunFolder,
               env: Mapping[str, str]) -> LiveSide:
    """Start a side process and wait for its ready line. A side that cannot start (or an
    interrupt while it starts) leaves no process running and its log closed; one that
    starts but dies or answers nonsense comes back lost (`gone`), as it would later."""
    log = (folder.path / LOG_NAME).open("ab")
    try:
        process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            text=True, bufsize=1, env=dict(env), start_new_session=True,
        )
    except BaseException:
        log.close()
        raise
    side = LiveSide(run, folder, process, log)
    try:
        side.answer(START_TIMEOUT_S)  # its "ready" line
    except BaseException:
        side._lose("interrupted while starting")
        side.close()
        raise
    return side


def start_sides(starts: Iterable[Callable[[], LiveSide]]) -> list[LiveSide]:
    """Each side started in turn; when one cannot start, the sides already started are
    closed before the error goes on, so none is left measuring on its own."""
    sides: list[LiveSide] = []
    try:
        for start in starts:
            sides.append(start())
    except BaseException:
        for side in sides:
            side.close()
        raise
    return sides


def run_round(
    folder: Path, manifest: AbManifest, runs: Sequence[SideRun], bench: Bench,
    pairs: Sequence[CellPair], pins_path: Path, device_model: str, echo: Callable[[str], None],
) -> RoundTurns:
    """One round: the sides start together, take turns cell by cell, then each side's
    folder gets its results.json and status.json, and the round its turns file."""
    round_ = runs[0].round
    ordered = start_order(runs)

    start = partial(start_side, folder, manifest, bench=bench, pairs=pairs,
                    pins_path=pins_path, device_model=device_model)
    timers = chosen_timers(folder, round_, manifest.rounds)
    losses: dict[str, list[str]] = {run.name: [] for run in ordered}
    record = RoundTurns(round=round_, runs={run.side: run.name for run in ordered}, cells={})
    sides = start_sides(partial(start, run=run) for run in ordered)
    started = time.perf_counter()
    try:
        for position, pair in enumerate(pairs, 1):
            took = time.perf_counter()
            turns = turn_cell(sides, pair, bench.timer, started,
                              manifest.turn_s or TARGET_TURN_S, timers.get(pair.id))
            record.cells[pair.id] = turns
            echo(f"  r{round_} [{position}/{len(pairs)}] {pair.id}: "
                 f"{describe(turns)} ({time.perf_counter() - took:.1f} s)")
            for i, side in enumerate(sides):
                if side.gone is not None:
                    # The side's cell in flight fails with the reason; a fresh process
                    # takes the cells left, as a fresh worker does in a plain run.
                    cell = pair.cell(side.run.side)
                    losses[side.run.name].append(f"{cell.id}: {side.gone}")
                    journal_loss(side, cell, side.gone)
                    echo(f"  r{round_} {side.run.name} lost at {cell.id}: {side.gone} "
                         f"(log: {side.folder.path / LOG_NAME}); starting it again")
                    side.close()
                    sides[i] = start(run=side.run)
    finally:
        codes = {side.run.name: side.close() for side in sides}
    for side in sides:
        cells = side_cells(pairs, side.run.side)
        complete = all(is_journaled(side.folder.journal, round_, c.index) for c in cells)
        build_run_results(side.folder, cells, complete)
        lost = losses[side.run.name]
        code = 1 if lost or side.gone is not None else codes[side.run.name]
        status = SideStatus(returncode=code, wall_s=round(time.perf_counter() - started, 3))
        STATUS_FORMAT.write(side.folder.path / STATUS_NAME, status)
    TURNS_FORMAT.write(turns_path(folder, round_), record)
    return record


def chosen_timers(folder: Path, current: int, rounds: int) -> dict[str, str]:
    """Each cell's timer as the earliest other round of the A/B that timed it recorded it
    (a resumed A/B keeps the choice of the rounds it kept, even when it runs an earlier
    round again)."""
    chosen: dict[str, str] = {}
    for round_ in range(rounds, 0, -1):
        path = turns_path(folder, round_)
        if round_ != current and path.exists():
            for cell_id, turns in TURNS_FORMAT.read(path).cells.items():
                if turns.timer is not None:
                    chosen[cell_id] = turns.timer
    return chosen


def journal_loss(side: LiveSide, cell: Cell, reason: str) -> None:
    """The cell a side died in, journaled as failed with why (unless the side got to it)."""
    journal = side.folder.journal
    if is_journaled(journal, side.run.round, cell.index):
        return
    result = RoundResult(round=side.run.round, status="failed", reason=f"side lost: {reason}",
                         side=side.folder.options.side)
    write_entry(journal, side.run.round, JournalEntry(index=cell.index, id=cell.id,
                                                       result=result))


def turn_cell(
    sides: Sequence[LiveSide], pair: CellPair, spec: TimerSpec, clock: float,
    target_turn_s: float = TARGET_TURN_S, timer: str | None = None,
) -> CellTurns:
    """Prepare the cell on every side (in start order; each side its own cell of the
    pair), take one untimed turn each, then the recorded turns, and let each side journal
    the cell.

    `timer`: the timer the cell was timed with in an earlier round, given to every side;
    None: the first side to prepare it chooses (auto decides by one eager estimate, which
    a busy host can push past its threshold in one process and not another), and the
    others are given its choice, so no two sides compare a graph's time with events'."""
    timeout = spec.cell_timeout_s
    estimates: dict[str, float] = {}
    reason: str | None = None
    index = {side.run.name: pair.cell(side.run.side).index for side in sides}
    for side in sides:
        request: dict[str, Any] = {"op": "prepare", "cell": index[side.run.name]}
        if timer is not None:
            request["timer"] = timer
        reply = side.ask(request, timeout)
        if reply is None or not reply.get("ok"):
            why = side.gone if reply is None else reply.get("reason")
            reason = reason or f"side {side.run.side} could not prepare the cell: {why}"
        else:
            estimates[side.run.side] = float(reply["wall_per_call_s"])
            timer = timer or reply.get("timer")
    turns = CellTurns(reason=reason, timer=timer)
    if reason is None:
        # The sides' median: one side's estimate can be off by its host's jitter, and
        # every side takes the same calls a turn.
        plan = plan_turns(statistics.median(estimates.values()), spec, len(sides),
                          target_turn_s)
        turns.calls_per_turn, turns.turns_per_side = plan.calls_per_turn, plan.turns_per_side
        by_side: dict[str, LiveSide] = {side.run.side: side for side in sides}
        # One untimed turn each first: a side's first turn after the others prepared
        # runs on a cold context and cold data, and would skew the first pairs.
        for side in sides:
            reply = side.ask({"op": "turn", "cell": index[side.run.name],
                              "calls": plan.calls_per_turn, "keep": False}, timeout)
            if reply is None or not reply.get("ok"):
                why = side.gone if reply is None else reply.get("reason")
                turns.reason = turns.reason or f"side {side.run.side}'s warm-up turn failed: {why}"
        for turn in turn_order(list(by_side), plan.turns_per_side):
            if turns.reason is not None:
                break
            start = time.perf_counter() - clock
            side = by_side[turn.side]
            reply = side.ask(
                {"op": "turn", "cell": index[side.run.name], "calls": plan.calls_per_turn},
                timeout,
            )
            if reply is None or not reply.get("ok"):
                why = side.gone if reply is None else reply.get("reason")
                turns.reason = f"side {turn.side}'s turn failed: {why}"
                break
            turns.sides.append(turn.side)
            turns.blocks.append(turn.block)
            turns.medians_s.append(float(reply["median_s"]))
            turns.spans_s.append([round(start, 6), round(time.perf_counter() - clock, 6)])
    for side in sides:
        side.ask({"op": "finish", "cell": index[side.run.name], "reason": turns.reason},
                 timeout)
    return turns


def describe(turns: CellTurns) -> str:
    if turns.reason is not None and not turns.medians_s:
        return f"no turns: {turns.reason}"
    parts = []
    for side in dict.fromkeys(turns.sides):
        # The round's delta as the analysis takes it (the median of the paired log
        # ratios): a median of the plain ratios differs where the pairs are even in number.
        pairs = cell_pairs(turns, side) if side != "A" else []
        if pairs:
            label = "A'" if side == "AA1" else side
            parts.append(f"{label}/A {signed_pct(to_pct(round_delta(pairs)))}%")
    return (", ".join(parts) + f"; {counted(turns.turns_per_side, 'turn')} x "
            f"{counted(turns.calls_per_turn, 'call')}"
            + (f"; {turns.reason}" if turns.reason else ""))


def execute_rounds(
    folder: Path, manifest: AbManifest, bench: Bench, pairs: Sequence[CellPair],
    echo: Callable[[str], None],
    rounds: Iterable[int] | None = None,
) -> None:
    """The rounds of an interleaved A/B (default: all planned), each with fresh sides."""
    pins_path = Path(folder) / PINS_NAME
    if not pins_path.exists():
        save_pins(pins_path, {})  # replays need the file even when nothing is tuned
    model = device_model(manifest.device)
    for round_ in rounds or range(1, manifest.rounds + 1):
        runs = [run for run in manifest.runs if run.round == round_]
        echo(f"round {round_}/{manifest.rounds}: sides {', '.join(r.name for r in runs)}")
        run_round(folder, manifest, runs, bench, pairs, pins_path, model, echo)
