"""The CUDA timers' sampling loop: batches of samples under the stop rule.

`enqueue(n, behind)` queues n timed samples on the GPU and returns a collector that
synchronizes and gives their seconds; `behind` says another batch is already queued
ahead of this one, so the GPU is busy and needs no hold while the host enqueues. Under the
`sustained` duty the loop keeps one batch queued ahead of the one it reads, so the GPU
never idles between samples: a collector waits for its own batch's last event, never for
the whole device, which would drain the batch queued behind it too and leave the GPU idle
while the host reads and enqueues (a sync per batch kept a power-capped H200 a few
percent faster than do_bench's unbroken stream; docs/fidelity/). Under `isolated` it
takes one sample per batch (the timer idles before each). The NVML clock is read while a
batch runs; every batch becomes a `Block` with that reading.

Around the loop, what every CUDA timer does alike: the warm-up (`warm_up_cell`, back to back
under `sustained`), the settle phase before sustained samples (`steady_sample`), and the
`Measurement` made of what was sampled (`as_measurement`).
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernbench.kernels.events import SECONDS_PER_MS, elapsed_s
from kernbench.kernels.gpu_hold import HostPace, PastHold
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.base import Measurement
from kernbench.timing.nvml import Reading, reason_names
from kernbench.timing.steady import Block, Settle, settle
from kernbench.timing.stop import StopReason, StopRule

MAX_BATCH = 32  # samples in one batch (one block)
MAX_WARMUP_CALLS = 10_000  # a back-to-back warm-up queues at most this many calls
ORIGIN_SLOT = -1  # the event pool of AheadPace's origin, apart from the batches' two
MARK_SLOT = -2  # ... and of its mark after each hold


@dataclass
class Batch:
    seconds: list[float]
    stages: Sequence[Mapping[str, float]] = field(default_factory=list)


Enqueue = Callable[[int, bool], Callable[[], Batch]]


class AheadPace:
    """The holds of a timer whose batches queue one ahead of the one read (`sample`), and
    the wait for each batch.

    Before a batch: behind one that still runs, a hold for what a host slower than the GPU
    loses over the batch (a Triton launch costs tens of µs); behind none, or one already
    done (the GPU idle), a full hold, or a start event would run before its work arrives
    and time the launch. After it: a wait on the batch's own last event, never the whole
    device, which would drain the batch queued behind it too.

    It also keeps, for the measurement to say (`gaps`): where each batch ran on the GPU
    (from an event recorded before the first), so whether its batches really ran back to
    back (what separates two batches should be what separates two samples, a flush); and
    how many batches the GPU reached before the host had queued them all (`PastHold`)."""

    def __init__(self, device: Any, pace: HostPace) -> None:
        self.device, self.pace = device, pace
        self._last: Any = None  # the last event of the batch enqueued before
        self._origin: Any = None
        # Per batch queued and not yet waited for: queued behind another, and found it done.
        self._queued: deque[tuple[bool, bool]] = deque()
        self._spans: list[tuple[float, float, bool]] = []  # first, last (ms from origin), dry
        self._past_hold = PastHold()

    def hold(self, n: int, behind: bool) -> None:
        if self._origin is None:
            self._origin = self.device.events(1, ORIGIN_SLOT)[0][0]
            self._origin.record()
        busy = behind and self._last is not None and not self._last.query()
        self._queued.append((behind, behind and not busy))
        seconds = self.pace.catch_up_for(n) if busy else self.pace.hold_for(n)
        if seconds > 0:
            self.device.hold(seconds)
        self._past_hold.held(self.device.events(1, MARK_SLOT)[0][0])

    def enqueued(self, n: int, host_s: float, last: Any) -> None:
        self.pace.enqueued(n, host_s)
        self._last = last
        self._past_hold.queued()

    def wait(self, n: int, first: Any, last: Any) -> None:
        """Wait for a batch of n samples from event `first` to `last` (batches are waited
        for in the order they were queued); the host keeps ahead of the GPU's time per
        sample, flushes included."""
        last.synchronize()
        self.pace.ran([elapsed_s(first, last) / n])
        behind, dry = self._queued.popleft() if self._queued else (False, False)
        if behind:
            self._spans.append((self._origin.elapsed_time(first),
                                self._origin.elapsed_time(last), dry))

    def gaps(self) -> dict[str, Any]:
        """How many batches were late (see the class), and of those queued behind another:
        the GPU time between one's last sample and the next one's first (a flush when they
        ran back to back), and how many found the GPU done with the batch before them."""
        found: dict[str, Any] = dict(self._past_hold.info())
        spans = self._spans
        between = [b[0] - a[1] for a, b in zip(spans, spans[1:], strict=False)]
        if between:
            found.update(between_batches_s=statistics.median(between) * SECONDS_PER_MS,
                         max_between_batches_s=max(between) * SECONDS_PER_MS,
                         batches_found_gpu_idle=f"{sum(s[2] for s in spans)} of {len(spans)}")
        return found


@dataclass
class Sampled:
    samples_s: list[float]
    stop_reason: StopReason
    stages_s: dict[str, list[float]]
    sm_clock_mhz: list[float]
    throttled: list[bool]
    throttle_reasons: list[int]
    blocks: list[Block] = field(default_factory=list)


def batch_size(
    taken: int,
    spent_s: float,
    per_sample_s: float | None,
    spec: TimerSpec,
    limit: int = MAX_BATCH,
) -> int:
    """Samples to enqueue next: one while nothing is known, then as many as fit the budget
    left (at least those still missing to `min_samples`), never past `max_samples`."""
    if per_sample_s is None:
        n = 1
    else:
        left = max(spec.budget_s - spent_s, 0.0)
        n = int(left / per_sample_s) if per_sample_s > 0 else limit
        n = max(n, spec.min_samples - taken, 1)
    return max(1, min(n, limit, spec.max_samples - taken))


class Collector:
    """What a sampling loop has read so far: samples, and per batch its NVML reading (per
    sample) and its block."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.stages: dict[str, list[float]] = {}
        self.clocks: list[float] = []
        self.throttled: list[bool] = []
        self.reasons: list[int] = []
        self.blocks: list[Block] = []

    def add(self, batch: Batch, reading: Reading | None) -> None:
        n = len(batch.seconds)
        self.samples.extend(batch.seconds)
        for stage_times in batch.stages:
            for name, seconds in stage_times.items():
                self.stages.setdefault(name, []).append(seconds)
        if reading is not None:
            self.clocks.extend([reading.sm_clock_mhz] * n)
            self.throttled.extend([reading.throttled] * n)
            self.reasons.extend([reading.reasons] * n)
        if n:
            self.blocks.append(Block.of(batch.seconds, reading))

    def result(self, reason: StopReason) -> Sampled:
        return Sampled(
            self.samples,
            reason,
            self.stages,
            self.clocks,
            self.throttled,
            self.reasons,
            self.blocks,
        )


def sample(
    spec: TimerSpec,
    enqueue: Enqueue,
    read_clock: Callable[[], Reading | None] | None = None,
    max_batch: int = MAX_BATCH,
    wall: Callable[[], float] = time.perf_counter,
    ahead: bool = False,
) -> Sampled:
    """The stop rule (timing.stop) around batches; with `ahead`, one batch stays queued
    ahead of the one being read (the sustained duty). Batches still queued when the rule
    stops are drained and dropped, so the stop rule decides on exactly what it saw."""
    seen = Collector()
    rule = StopRule(spec)
    queued: list[tuple[Callable[[], Batch], int]] = []
    began = wall()
    per_sample: float | None = None
    while True:
        while len(queued) < (2 if ahead else 1):
            taken = len(seen.samples) + sum(n for _, n in queued)
            if taken >= spec.max_samples:
                break
            n = batch_size(taken, wall() - began, per_sample, spec, max_batch)
            queued.append((enqueue(n, bool(queued)), n))
        reading = read_clock() if read_clock is not None else None
        collect, _ = queued.pop(0)
        seen.add(collect(), reading)
        spent = wall() - began
        per_sample = spent / len(seen.samples)
        reason = rule.check(seen.samples, spent)
        if reason is not None:
            for collect, _ in queued:
                collect()
            return seen.result(reason)


def warm_up(
    run: Callable[[], object],
    synchronize: Callable[[], None],
    seconds: float,
    back_to_back: bool = False,
    wall: Callable[[], float] = time.perf_counter,
) -> int:
    """Call for about `seconds` of wall time, at least once, and return how many calls.

    Synchronizing after each call, or `back_to_back` (the sustained duty): one call timed
    by the wall, then as many as fill `seconds` queued at once and one sync at the end, as
    do_bench warms up. On a power-capped H200 the warm-up sets the state the samples after
    it start from: behind a sync per call, do_bench's own loop read 4% faster than behind
    its back-to-back warm-up, and kernbench's sustained timer 1.5% faster than behind
    do_bench's (docs/gpu-runs.md)."""
    if back_to_back:
        started = wall()
        run()
        synchronize()
        one = max(wall() - started, 1e-7)
        more = min(MAX_WARMUP_CALLS, int(seconds / one) - 1)
        for _ in range(more):
            run()
        synchronize()
        return 1 + max(more, 0)
    calls = 0
    deadline = wall() + seconds
    while calls == 0 or wall() < deadline:
        run()
        synchronize()
        calls += 1
    return calls


def warm_up_cell(kernel: Any, device: Any, spec: TimerSpec) -> int:
    """`warm_up` as the cell's duty asks: back to back under `sustained`, unless the kernel
    is staged (it synchronizes inside, so its calls cannot queue)."""
    return warm_up(kernel.run, device.synchronize, spec.warmup_s,
                   back_to_back=spec.duty == "sustained" and kernel.stage_times is None)


SETTLE_MAX_CALLS = 512  # calls in one settle block (events are allocated per call)


def steady_sample(
    spec: TimerSpec,
    enqueue: Enqueue,
    device: Any,
    can_settle: bool = True,
    max_batch: int = MAX_BATCH,
) -> tuple[Sampled, Settle | None]:
    """`sample` under the spec's duty, on a GPU: sustained cells settle first where the spec
    says so (`TimerSpec.settles`; not when `can_settle` is false), then keep a batch queued
    ahead; isolated cells take one sample per batch (their `enqueue` idles before it)."""
    if spec.duty == "isolated":
        return sample(spec, enqueue, device.read_clock, 1), None
    settled = None
    if can_settle and spec.settles("cuda"):

        def start_block(n: int, behind: bool) -> Callable[[], list[float]]:
            collect = enqueue(min(n, SETTLE_MAX_CALLS), behind)
            return lambda: collect().seconds

        settled = settle(start_block, spec.settle_tol, spec.settle_s,
                         read_clock=device.read_clock, wait_for_clock=spec.settle_clock,
                         min_s=spec.settle_min_s)
    return sample(spec, enqueue, device.read_clock, max_batch, ahead=max_batch > 1), settled


def as_measurement(
    timer: str,
    sampled: Sampled,
    warmup_calls: int,
    extra: dict[str, Any],
    duty: str,
    settled: Settle | None,
) -> Measurement:
    if sampled.throttle_reasons:
        seen = {name for mask in set(sampled.throttle_reasons) for name in reason_names(mask)}
        extra = {**extra, "clock_event_reasons": " ".join(sorted(seen))}
    return Measurement(
        timer=timer,
        samples_s=sampled.samples_s,
        warmup_calls=warmup_calls,
        stop_reason=sampled.stop_reason,
        stages_s=sampled.stages_s,
        sm_clock_mhz=sampled.sm_clock_mhz,
        throttled=sampled.throttled,
        extra=extra,
        duty=duty,
        settle=settled.as_dict() if settled is not None else None,
        blocks=[block.as_dict() for block in sampled.blocks],
    )
