"""A round in turns (`timer.turns` > 1): every cell of the round is prepared first, then
visited `turns` times in the round's order, each visit a turn with its share of the
budget; a cell's result is its turns' samples together.

A GPU's speed wanders in episodes of 0.1 to 1 s (its power state), and a cell sampled in
one window of a few hundred milliseconds reports the episode it fell in: its rounds then
disagree by what the episodes do (issue 11, docs/gpu-runs.md). Turns spread each cell's
samples over the whole round, so every cell sees a mix of episodes and its round median
moves less; the cost is every cell of the round held at once (memory) and a settle phase
per turn. Each cell's turns are recorded: `extra.turn_samples` (samples per turn) and a
`turn` on each block.

A cell that fails (build, check, a turn) is journaled at once; the others are journaled
when their last turn ends, so a worker that dies mid-round costs the round's unfinished
cells, which a fresh worker measures again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kernbench.kernels.base import Kernel
from kernbench.plan import Cell
from kernbench.results.model import RoundResult
from kernbench.spec.timer_model import TimerSpec, turn_spec  # turn_spec: a turn's timer
from kernbench.timing.base import Measurement


def merged(turns: Sequence[Measurement]) -> Measurement:
    """One measurement of a cell's turns: samples, clocks and blocks in the order taken
    (each block marked with its turn), warm-up calls summed, the last turn's stop reason,
    the settle phases summed up, their blocks kept in order."""
    first = turns[0]
    stages: dict[str, list[float]] = {}
    for turn in turns:
        for name, values in turn.stages_s.items():
            stages.setdefault(name, []).extend(values)
    settles = [t.settle for t in turns if t.settle is not None]
    settle = None
    if settles:
        settle = {
            "settled": all(s["settled"] for s in settles),
            "seconds": sum(s["seconds"] for s in settles),
            "calls": sum(s["calls"] for s in settles),
            "turns_settled": sum(bool(s["settled"]) for s in settles),
            # Every turn's settle blocks in the order taken; turn_settle_blocks splits them.
            "block_medians_s": [m for s in settles for m in s.get("block_medians_s", [])],
            "block_clocks_mhz": [c for s in settles for c in s.get("block_clocks_mhz", [])],
            "turn_settle_blocks": [len(s.get("block_medians_s", [])) for s in settles],
        }
    return Measurement(
        timer=first.timer,
        samples_s=[s for t in turns for s in t.samples_s],
        warmup_calls=sum(t.warmup_calls for t in turns),
        stop_reason=turns[-1].stop_reason,
        stages_s=stages,
        sm_clock_mhz=[c for t in turns for c in t.sm_clock_mhz],
        throttled=[f for t in turns for f in t.throttled],
        extra={**first.extra, "turns": len(turns),
               "turn_samples": [len(t.samples_s) for t in turns]},
        duty=first.duty,
        settle=settle,
        blocks=[{**b, "turn": k} for k, t in enumerate(turns) for b in t.blocks],
    )


@dataclass
class Visit:
    """A cell held through a round in turns."""

    cell: Cell
    kernel: Kernel
    result: RoundResult
    started: float
    measured: list[Measurement] = field(default_factory=list)


class TurnsHooks:
    """What the worker does around a round in turns (journal, current cell, timing)."""

    def __init__(
        self,
        prepare: Callable[[Cell], tuple[Kernel | None, RoundResult]],
        measure: Callable[[Kernel, TimerSpec], Measurement],
        finish: Callable[[Visit, Measurement | None, BaseException | None], None],
        journal: Callable[[Cell, RoundResult], None],
        current: Callable[[Cell], None],
        wall: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.prepare, self.measure, self.finish = prepare, measure, finish
        self.journal, self.current, self.wall = journal, current, wall


def run_in_turns(cells: Sequence[Cell], spec: TimerSpec, hooks: TurnsHooks) -> None:
    """Prepare every cell, take `spec.turns` turns of each in order, then finish each."""
    share = turn_spec(spec, spec.turns)
    held: list[Visit] = []
    for cell in cells:
        started = hooks.wall()
        hooks.current(cell)
        kernel, result = hooks.prepare(cell)
        if kernel is None:
            result.wall_s = hooks.wall() - started
            hooks.journal(cell, result)
        else:
            held.append(Visit(cell, kernel, result, started))
    for _ in range(spec.turns):
        for visit in list(held):
            hooks.current(visit.cell)
            try:
                visit.measured.append(hooks.measure(visit.kernel, share))
            except Exception as exc:  # noqa: BLE001 - a failing turn fails its cell only
                hooks.finish(visit, None, exc)
                held.remove(visit)
                visit.result.wall_s = hooks.wall() - visit.started
                hooks.journal(visit.cell, visit.result)
    for visit in held:
        hooks.finish(visit, merged(visit.measured), None)
        visit.result.wall_s = hooks.wall() - visit.started
        hooks.journal(visit.cell, visit.result)
