"""The ranks timer: a kernel run by several ranks at once (a collective), timed on all of them.

Every rank must run the same number of calls, or one waits forever in a collective its
peers have left; and a collective is only as fast as its slowest rank. So each decision
(warm-up length, calls per sample, chunk size, when to stop) is taken from times reduced
with MAX across the ranks (`RankGroup.agree_max`): every rank sees the same numbers and
reaches the same decision without a broadcast. A sample is the slowest rank's time of a
batch of calls, divided by the batch.

Under the `sustained` duty a batch is `reps` calls back to back, about SAMPLE_TARGET_S
long (on GPUs: kernels/collective_cuda.py); under `isolated`, one call. On GPUs a
sustained cell settles before its samples, as the single-GPU timers' cells do
(timing.steady, ADR 0064), on agreed times and clocks.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable

from kernbench.kernels.base import Kernel, RankGroup
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.base import Measurement
from kernbench.timing.nvml import Reading
from kernbench.timing.sampling import Batch, Collector
from kernbench.timing.steady import Settle, settle
from kernbench.timing.stop import StopReason, StopRule

# Calls are timed in batches of about this long, so the clock's and the synchronization's
# overhead stays small against microsecond-scale collectives.
SAMPLE_TARGET_S = 1e-3
PROBE_SAMPLES = 2  # sustained samples that size the rest (`sustained_calls`)


class RanksTimer:
    """`read_clock`: this rank's GPU state (NVML), read after each chunk of batches and
    kept as a block, as the single-GPU timers keep theirs. `device` ("cuda" or "cpu"): where
    the ranks run, which decides whether a cell settles first (`TimerSpec.settles`)."""

    name = "collective"

    def __init__(
        self, read_clock: Callable[[], Reading | None] | None = None, device: str = "cpu"
    ) -> None:
        self.read_clock = read_clock
        self.device = device

    def measure(self, kernel: Kernel, spec: TimerSpec) -> Measurement:
        ranks = kernel.ranks
        if ranks is None:
            raise ValueError("the ranks timer needs a kernel with `ranks` (a RankGroup)")
        ranks.barrier()
        warmup_calls, per_call_s = warm_up(kernel.run, ranks, spec.warmup_s, spec.l2)
        reps = 1
        settled: Settle | None = None
        if spec.duty == "sustained":
            probed, reps, per_call_s = sustained_calls(ranks, per_call_s, spec.l2)
            warmup_calls += probed
            if spec.settles(self.device):
                settled = settle_ranks(ranks, reps, spec, self.read_clock)
                warmup_calls += settled.calls
        rule = StopRule(spec)
        seen = Collector()  # seconds per call, the slowest rank's, with the GPU's state
        own: list[float] = []  # seconds per call, this rank's
        # The sum of the agreed batch times, not this rank's wall clock: every rank must
        # see the same budget spent.
        spent = 0.0
        reason: StopReason | None = None
        while reason is None:
            count = next_chunk(len(seen.samples), spec, spent, reps * per_call_s)
            batches = ranks.time_batches(count, reps, spec.duty, spec.l2)
            reading = self.read_clock() if self.read_clock is not None else None
            local = [seconds / reps for seconds in batches]
            own.extend(local)
            agreed = ranks.agree_max(local)
            seen.add(Batch(agreed), reading)
            spent += sum(agreed) * reps
            reason = rule.check(seen.samples, spent)
        return Measurement(
            timer=self.name,
            samples_s=seen.samples,
            warmup_calls=warmup_calls,
            stop_reason=reason,
            sm_clock_mhz=seen.clocks,
            throttled=seen.throttled,
            blocks=[block.as_dict() for block in seen.blocks],
            extra={
                "per_rank_median_s": ranks.per_rank(statistics.median(own)),
                "world_size": ranks.world_size,
                "backend": ranks.backend,
                "calls_per_sample": reps,
                **ranks.timing_info(),
            },
            duty=spec.duty,
            settle=settled.as_dict() if settled is not None else None,
        )


def settle_ranks(
    ranks: RankGroup,
    reps: int,
    spec: TimerSpec,
    read_clock: Callable[[], Reading | None] | None = None,
) -> Settle:
    """`steady.settle` over sustained samples of `reps` calls, decided alike on every rank:
    its block medians are the slowest rank's, its clock the sum of the agreed sample times
    (each rank's wall clock differs), its SM clock the slowest rank's. Unlike a single GPU's
    settle blocks, each block waits for the one before it (a batch ends in a synchronize),
    so the GPUs idle a host's turn between blocks, as between the samples that follow.
    The calls it made are counted in `calls`."""
    spent = 0.0

    def start_block(count: int, behind: bool) -> Callable[[], list[float]]:
        def collect() -> list[float]:
            nonlocal spent
            took = ranks.time_batches(count, reps, "sustained", spec.l2)
            agreed = ranks.agree_max([seconds / reps for seconds in took])
            spent += sum(agreed) * reps
            return agreed

        return collect  # run when read: a batch is queued and read in one step

    def slowest_clock() -> Reading | None:
        reading = read_clock() if read_clock is not None else None
        # A rank without a reading offers -inf, so any rank's reading wins the MAX; every
        # rank then holds the same clock, or none.
        lowest = -ranks.agree_max([-reading.sm_clock_mhz if reading else -math.inf])[0]
        if math.isinf(lowest):
            return None
        if reading is None:
            return Reading(sm_clock_mhz=lowest, reasons=0)
        return dataclasses.replace(reading, sm_clock_mhz=lowest)

    settled = settle(start_block, spec.settle_tol, spec.settle_s, wall=lambda: spent,
                     read_clock=slowest_clock, wait_for_clock=spec.settle_clock,
                     min_s=spec.settle_min_s)
    return dataclasses.replace(settled, calls=settled.calls * reps)


def warm_up(
    run: Callable[[], object], ranks: RankGroup, warmup_s: float, l2: str
) -> tuple[int, float]:
    """Run batches of doubling length until `warmup_s` is spent and a batch is long enough
    to time; return (calls, seconds per call of the last batch), agreed by all ranks."""
    run()  # lazy set-up (communicators, allocator) stays out of the estimate
    calls, spent, batch = 1, 0.0, 1
    while True:
        took = ranks.agree_max(ranks.time_batches(1, batch, "isolated", l2))[0]
        calls, spent = calls + batch, spent + took
        if spent >= warmup_s and took >= SAMPLE_TARGET_S / 4:
            return calls, took / batch
        batch *= 2


def sustained_calls(
    ranks: RankGroup, eager_per_call_s: float, l2: str
) -> tuple[int, int, float]:
    """(calls probed, calls per sustained sample, seconds per call): a sample is about
    SAMPLE_TARGET_S of calls.

    The warm-up's eager calls are paced by the host's launch cost, on GPUs several times a
    small collective's own time, so a sample sized from them holds a few times fewer calls
    than meant. Two samples at that size, timed as sustained samples are, give the time per
    call to size them from (the faster: the first may carry a one-time cost, a fresh
    graph's first launch), agreed by all ranks.
    """
    probe_reps = max(1, round(SAMPLE_TARGET_S / eager_per_call_s))
    took = min(ranks.agree_max(ranks.time_batches(PROBE_SAMPLES, probe_reps, "sustained", l2)))
    per_call_s = max(took, 1e-9) / probe_reps
    return PROBE_SAMPLES * probe_reps, max(1, round(SAMPLE_TARGET_S / per_call_s)), per_call_s


def next_chunk(taken: int, spec: TimerSpec, spent_s: float, sample_s: float) -> int:
    """How many samples to take before the ranks compare notes again.

    Chunks grow with the samples taken (few synchronizations), but never past the
    samples allowed nor much past the budget.
    """
    count = max(spec.min_samples - taken, taken // 2, 1)
    if taken >= spec.min_samples:
        left = max(spec.budget_s - spent_s, 0.0)
        count = min(count, max(1, math.ceil(left / sample_s)))
    return min(count, spec.max_samples - taken)
