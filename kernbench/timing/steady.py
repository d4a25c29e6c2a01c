"""The steady state a GPU sample is taken in: duty cycles, the settle phase, block summaries.

A GPU under sustained load sinks into its power cap within a fraction of a second and
then wanders in episodes of 0.1 to 1 s; an idle GPU runs its first launches at full clock.
So a number means something only with the state it was taken in (ADR 0036):

- `sustained`: samples back to back, the next batch queued before the last is read, so
  the GPU never idles between samples (a model's forward pass; do_bench);
- `isolated`: an idle gap before each sample (ncu's single launches).

Before sampling, a sustained cell *settles*: it runs blocks of calls until two
consecutive block medians agree within a tolerance (with `timer.settle_clock`, and the SM
clocks read after them: a power-capped card can hold a kernel's time steady for a few
blocks while its clock is still moving), or a time cap passes; whether it settled, how
long it took and the clocks it saw are recorded. It never ends inside the boost window
(`timer.settle_min_s`): after any pause an H200 runs the first ~0.1 s of load at boost
clocks, and blocks agree there before its power cap takes hold; past that floor it looks
for agreement for up to `timer.settle_s` more (ADR 0053). While sampling, each batch of
samples is a block, summarized with the NVML reading taken while it ran.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kernbench.spec.timer_model import SETTLE_CLOCK_TOL
from kernbench.timing.nvml import Reading, reason_names

SETTLE_BLOCK_S = 0.02  # one settle block: long enough for a stable median of short kernels
SETTLE_MIN_BLOCKS = 3  # the first block (clocks ramping from idle) never counts
ISOLATED_GAP_S = 2e-3  # idle before each isolated sample ...
ISOLATED_GAP_FACTOR = 10.0  # ... or this many times the kernel, whichever is longer
MAX_ISOLATED_GAP_S = 0.05


def isolated_gap(kernel_s: float) -> float:
    """The idle time before an isolated sample: enough for the power draw to fall back."""
    return min(max(ISOLATED_GAP_S, ISOLATED_GAP_FACTOR * kernel_s), MAX_ISOLATED_GAP_S)


class Idle:
    """The idle gap before each isolated sample, sized from the samples seen so far."""

    def __init__(self, device: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self.device = device
        self.sleep = sleep
        self.kernel_s = 0.0

    def before_sample(self) -> None:
        self.device.synchronize()
        self.sleep(isolated_gap(self.kernel_s))

    def saw(self, seconds: Sequence[float]) -> None:
        if seconds:
            self.kernel_s = statistics.median(seconds)


@dataclass(frozen=True)
class Block:
    """One batch of samples: how many, their median, and the GPU's state while it ran."""

    samples: int
    median_s: float
    sm_clock_mhz: float | None = None
    power_w: float | None = None
    clock_event_reasons: tuple[str, ...] = ()

    @classmethod
    def of(cls, seconds: Sequence[float], reading: Reading | None) -> Block:
        if reading is None:
            return cls(len(seconds), statistics.median(seconds))
        return cls(
            samples=len(seconds),
            median_s=statistics.median(seconds),
            sm_clock_mhz=reading.sm_clock_mhz,
            power_w=reading.power_w,
            clock_event_reasons=tuple(reason_names(reading.reasons)),
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["clock_event_reasons"] = list(self.clock_event_reasons)
        return data


@dataclass
class Settle:
    """What the settle phase found: the block medians it saw, and why it stopped."""

    settled: bool
    seconds: float
    calls: int
    block_medians_s: list[float] = field(default_factory=list)
    block_clocks_mhz: list[float] = field(default_factory=list)  # where NVML reads

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def agree(previous: float, current: float, tolerance: float) -> bool:
    """Within `tolerance` of each other; a reading at or below zero agrees with nothing."""
    return previous > 0 and current > 0 and abs(current / previous - 1.0) <= tolerance


def settle(
    start_block: Callable[[int, bool], Callable[[], list[float]]],
    tolerance: float,
    max_s: float,
    block_s: float = SETTLE_BLOCK_S,
    wall: Callable[[], float] = time.perf_counter,
    read_clock: Callable[[], Reading | None] | None = None,
    wait_for_clock: bool = False,
    min_s: float = 0.0,
) -> Settle:
    """Run blocks of samples until two consecutive block medians agree within `tolerance`
    (with `wait_for_clock`, and their clocks, read by `read_clock` after each block, within
    SETTLE_CLOCK_TOL) once `min_s` of wall time has passed, or until `max_s` more has: the
    floor is where agreement may first end the phase, `max_s` how long it is sought past it.

    `start_block(n, behind)` queues n samples and returns a collector of their seconds;
    `behind`: another block is queued ahead of them. Blocks run as sustained samples do,
    one queued ahead of the one being read, so the GPU never idles between them (a sync
    per block let a power-capped H200 cool a little every 20 ms: docs/gpu-runs.md). The
    first block is one sample; each block is sized from the wall time per sample of the
    last one read (the one queued meanwhile keeps its size), so a block lasts about
    `block_s` whatever a sample costs. The first block never counts: it starts from
    whatever state the last cell left. The block still queued at the end is drained.
    """
    medians: list[float] = []
    clocks: list[float] = []
    began = last_read = wall()
    done = 0
    calls = 1
    ahead = start_block(calls, False)
    while True:
        collect, ahead = ahead, start_block(calls, True)
        seconds = collect()
        now = wall()
        took, last_read, spent = now - last_read, now, now - began
        reading = read_clock() if read_clock is not None else None
        if reading is not None:
            clocks.append(reading.sm_clock_mhz)
        done += len(seconds)
        medians.append(statistics.median(seconds))
        steady_clock = (not wait_for_clock or len(clocks) < 2
                        or agree(clocks[-2], clocks[-1], SETTLE_CLOCK_TOL))
        settled = (len(medians) >= SETTLE_MIN_BLOCKS and steady_clock and spent >= min_s
                   and agree(medians[-2], medians[-1], tolerance))
        if settled or spent >= min_s + max_s:
            done += len(ahead())
            return Settle(settled, spent, done, medians, clocks)
        per_sample = took / max(1, len(seconds))
        calls = max(1, round(block_s / per_sample)) if per_sample > 0 else calls


def round_spread(round_medians: Sequence[float]) -> float | None:
    """max / min - 1 of a cell's round medians; None under two rounds."""
    values = [m for m in round_medians if m and m > 0]
    return max(values) / min(values) - 1.0 if len(values) >= 2 else None


def is_unsteady(spread: float | None, tolerance: float) -> bool:
    """Rounds that disagree beyond `tolerance`; one round cannot disagree."""
    return spread is not None and spread > tolerance
