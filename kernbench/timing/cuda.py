"""CUDA timers: CUDA events per sample, and CUDA graphs for launches of a few microseconds.

Both share one sampling loop (`timing.sampling`) and the duty cycles of `timing.steady`:
under `sustained`, a settle phase first, then batches queued back to back; under
`isolated`, an idle gap before each sample. They talk to the GPU only through a
`CudaDevice` (`timing.cuda_device`), so their arithmetic is tested on the CPU with a fake
device.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from kernbench.kernels.base import Kernel
from kernbench.kernels.events import elapsed_s
from kernbench.kernels.gpu_hold import FIRST_HOLD_S, KernelPace
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.base import Measurement, Timer
from kernbench.timing.cuda_device import FLUSH_MODES, CudaDevice
from kernbench.timing.sampling import (
    MAX_BATCH,
    AheadPace,
    Batch,
    as_measurement,
    steady_sample,
    warm_up_cell,
)
from kernbench.timing.steady import Idle
from kernbench.units import counted

GRAPH_THRESHOLD_S = 20e-6  # auto: an eager median under this is timed with graphs
GRAPH_TARGET_S = 1e-3  # kernel time captured in one graph
GRAPH_MAX_S = 20e-3  # one graph replay, flushes included
MAX_GRAPH_LAUNCHES = 1000
ESTIMATE_CALLS = 5  # eager calls whose median sizes a graph (and picks auto's timer)
FLUSH_ESTIMATE_CALLS = 3


def graph_launches(
    estimate_s: float,
    flush_s: float = 0.0,
    target_s: float = GRAPH_TARGET_S,
    max_graph_s: float = GRAPH_MAX_S,
    max_launches: int = MAX_GRAPH_LAUNCHES,
) -> int:
    """How many launches one graph captures: enough for `target_s` of kernel time, while one
    replay (each launch with its flush) stays under `max_graph_s`."""
    if not estimate_s > 0:
        return max_launches
    launches = math.ceil(target_s / estimate_s - 1e-9)  # 1e-3 / 2e-6 is 500.00000000000006
    launches = min(launches, int(max_graph_s / (estimate_s + flush_s)))
    return max(1, min(launches, max_launches))


def per_launch(graph_s: float, flush_graph_s: float, launches: int) -> float:
    """One launch's time from a graph of `launches` (flush + run) and the flush-only graph.

    Both graphs hold the same flushes in the same order, so their difference is the
    launches alone; the launch gaps inside a graph are what eager launches cannot avoid.
    """
    return (graph_s - flush_graph_s) / launches


def unresolved(samples_s: list[float], launches: int, flush_s: float) -> str | None:
    """Why graph samples cannot be a kernel's time (some at or below zero), or None."""
    bad = sum(1 for s in samples_s if not s > 0)
    if not bad:
        return None
    why = f"{bad} of {counted(len(samples_s), 'graph sample')} at or below zero"
    if flush_s > 0:
        why += (f": {counted(launches, 'launch', 'launches')} behind flushes of "
                f"{flush_s * 1e6:.3g} us each do not outweigh the flush graph's jitter")
    return why


def flush_extra(device: Any, cold: bool) -> dict[str, Any]:
    """How the measurement flushed, for its `extra`."""
    if not cold:
        return {"flush_bytes": 0}
    return {"flush": device.flush_mode, "flush_bytes": device.flush_size,
            "flush_kernel": getattr(device, "flush_kernel", "torch")}


class EventTimer:
    """CUDA events around each call; with `l2: cold`, an L2 flush before each, untimed.

    flush ("read" or "write", see CudaDevice) applies to the device the timer makes; a
    device passed in brings its own.
    """

    name = "event"

    def __init__(
        self, device: Any = None, flush: str = "read", sleep: Callable[[float], None] = time.sleep
    ) -> None:
        if flush not in FLUSH_MODES:
            raise ValueError(f"unknown flush {flush!r}; known: {', '.join(FLUSH_MODES)}")
        self._device = device
        self._flush = flush
        self._sleep = sleep
        self._pace = KernelPace()

    def measure(
        self,
        kernel: Kernel,
        spec: TimerSpec,
        around: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> Measurement:
        """`around`: a context each timed call runs inside (the cupti timer's ranges)."""
        # One device for all of this timer's measurements: its buffers and events live on.
        self._device = device = self._device or CudaDevice(flush=self._flush)
        call = kernel.run if around is None else _inside(around, kernel.run)
        cold = spec.l2 == "cold"
        extra = dict(device.prepare(cold))
        staged = kernel.stage_times is not None
        warmup_calls = warm_up_cell(kernel, device, spec)

        ahead = AheadPace(device, self._pace.of(kernel))
        idle = Idle(device, self._sleep) if spec.duty == "isolated" else None
        slots = itertools.count()

        def enqueue(n: int, behind: bool) -> Callable[[], Batch]:
            pairs = device.events(n, next(slots) % 2)
            if idle is not None:
                idle.before_sample()
            if not staged:  # a staged kernel synchronizes inside: nothing to hold for
                ahead.hold(n, behind)
            started = time.perf_counter()
            for start, end in pairs:
                if cold:
                    device.flush()
                start.record()
                call()
                end.record()
            ahead.enqueued(n, time.perf_counter() - started, pairs[-1][1])

            def collect() -> Batch:
                ahead.wait(n, pairs[0][0], pairs[-1][1])
                seconds = [elapsed_s(start, end) for start, end in pairs]
                if idle is not None:
                    idle.saw(seconds)
                stages = [dict(kernel.stage_times())] if kernel.stage_times is not None else []
                return Batch(seconds, stages)

            return collect

        # A staged kernel keeps only its last call's stage times: one sample per batch.
        sampled, settled = steady_sample(
            spec, enqueue, device, can_settle=not staged, max_batch=1 if staged else MAX_BATCH
        )
        extra.update(l2=spec.l2, **flush_extra(device, cold), **ahead.gaps())
        return as_measurement(self.name, sampled, warmup_calls, extra, spec.duty, settled)


def _inside(
    around: Callable[[], AbstractContextManager[Any]], run: Callable[[], object]
) -> Callable[[], None]:
    def call() -> None:
        with around():
            run()

    return call


def eager_estimate(kernel: Kernel, device: Any, calls: int = ESTIMATE_CALLS) -> float:
    """Median of a few event-timed eager calls (after one untimed call), seconds.

    The calls are queued behind a hold, so they run back to back: a kernel shorter than
    its launch shows its own time, not the launch rate (which would hide it from the
    graph timer it needs)."""
    return _event_median(kernel.run, device, calls, hold_s=FIRST_HOLD_S)


def flush_estimate(device: Any, calls: int = FLUSH_ESTIMATE_CALLS) -> float:
    """Median of a few event-timed L2 flushes (after one untimed flush), seconds; a flush
    outlasts its launch, so it needs no hold."""
    return _event_median(device.flush, device, calls)


def _event_median(
    call: Callable[[], object], device: Any, calls: int, hold_s: float = 0.0
) -> float:
    call()
    device.synchronize()
    pairs = device.events(calls)
    if hold_s > 0:
        device.hold(hold_s)
    for start, end in pairs:
        start.record()
        call()
        end.record()
    device.synchronize()
    return statistics.median(elapsed_s(start, end) for start, end in pairs)


@dataclass
class _Captured:
    """A kernel's graphs, kept by its timer for its later measurements (an interleaved
    A/B's turns): capturing them again every few milliseconds would cost more than the
    turn."""

    kernel: weakref.ref[Kernel]
    cold: bool
    graph: Any
    flush_graph: Any
    launches: int
    estimate_s: float
    flush_s: float


class GraphTimer:
    """Many launches captured in one CUDA graph, replayed per sample.

    Cold L2: the graph holds `launches` x (flush, run) and a second graph the same flushes
    alone; a sample is (replay(run graph) - replay(flush graph)) / launches, the two
    replays taken back to back so drift cancels. The graphs are captured at a kernel's
    first measurement and replayed by its later ones.

    A difference can only resolve a kernel whose launches outweigh the flush graph's
    jitter: a sample at or below zero says it did not (a flush hundreds of times the
    kernel, so a graph of few launches), and the kernel is timed by the fallback instead,
    or fails with that reason where there is none.
    """

    name = "graph"

    def __init__(self, device: Any = None, fallback: Timer | None = None) -> None:
        self._device = device
        self._fallback = fallback
        self._captured: _Captured | None = None
        # The kernel whose capture failed or whose graphs could not resolve it, why, and
        # under which key of `extra`: its later measurements go straight to the fallback.
        self._refused: tuple[weakref.ref[Kernel], str, str] | None = None
        self._pace = KernelPace()

    def _fall_back(
        self, kernel: Kernel, spec: TimerSpec, why: str, key: str = "graph_capture_failed"
    ) -> Measurement:
        assert self._fallback is not None  # set only where a failure has one
        measured = self._fallback.measure(kernel, spec)
        measured.extra[key] = why
        return measured

    def _capture(self, kernel: Kernel, device: Any, cold: bool) -> _Captured:
        kept = self._captured
        if kept is not None and kept.kernel() is kernel and kept.cold == cold:
            return kept
        estimate = eager_estimate(kernel, device)
        flush_s = flush_estimate(device) if cold else 0.0
        launches = graph_launches(estimate, flush_s)

        def runs() -> None:
            for _ in range(launches):
                if cold:
                    device.flush()
                kernel.run()

        def flushes() -> None:
            for _ in range(launches):
                device.flush()

        graph = device.capture(runs)
        flush_graph = device.capture(flushes) if cold else None
        self._captured = _Captured(weakref.ref(kernel), cold, graph, flush_graph, launches,
                                   estimate, flush_s)
        return self._captured

    def measure(self, kernel: Kernel, spec: TimerSpec) -> Measurement:
        # One device for all of this timer's measurements: its graphs read its flush buffer.
        self._device = device = self._device or CudaDevice()
        cold = spec.l2 == "cold"
        extra: dict[str, Any] = dict(device.prepare(cold))
        warmup_calls = warm_up_cell(kernel, device, spec)
        refused = self._refused
        if refused is not None and refused[0]() is kernel:
            return self._fall_back(kernel, spec, *refused[1:])
        try:
            captured = self._capture(kernel, device, cold)
        except Exception as exc:
            if self._fallback is None:
                raise
            why = f"{type(exc).__name__}: {exc}"
            self._refused = (weakref.ref(kernel), why, "graph_capture_failed")
            return self._fall_back(kernel, spec, why)
        graph, flush_graph, launches = captured.graph, captured.flush_graph, captured.launches

        idle = Idle(device) if spec.duty == "isolated" else None
        slots = itertools.count()
        ahead = AheadPace(device, self._pace.of(kernel))

        def enqueue(n: int, behind: bool) -> Callable[[], Batch]:
            pairs = device.events(2 * n, next(slots) % 2)
            if idle is not None:
                idle.before_sample()
            ahead.hold(n, behind)
            started = time.perf_counter()
            for i in range(n):
                start, end = pairs[2 * i]
                start.record()
                graph.replay()
                end.record()
                if flush_graph is not None:
                    start, end = pairs[2 * i + 1]
                    start.record()
                    flush_graph.replay()
                    end.record()
            last = end
            ahead.enqueued(n, time.perf_counter() - started, last)

            def collect() -> Batch:
                ahead.wait(n, pairs[0][0], last)
                seconds = []
                for i in range(n):
                    start, end = pairs[2 * i]
                    graph_s = elapsed_s(start, end)
                    flush_graph_s = 0.0
                    if flush_graph is not None:
                        start, end = pairs[2 * i + 1]
                        flush_graph_s = elapsed_s(start, end)
                    seconds.append(per_launch(graph_s, flush_graph_s, launches))
                if idle is not None:
                    idle.saw([graph_s])
                return Batch(seconds)

            return collect

        sampled, settled = steady_sample(spec, enqueue, device)
        lost = unresolved(sampled.samples_s, launches, captured.flush_s)
        if lost is not None:
            if self._fallback is None:
                raise RuntimeError(lost)
            self._refused = (weakref.ref(kernel), lost, "graph_unresolved")
            return self._fall_back(kernel, spec, lost, "graph_unresolved")
        extra.update(
            l2=spec.l2,
            launches_per_graph=launches,
            eager_estimate_s=captured.estimate_s,
            flush_estimate_s=captured.flush_s,
            **flush_extra(device, cold),
            **ahead.gaps(),
        )
        return as_measurement(self.name, sampled, warmup_calls, extra, spec.duty, settled)


def choose_auto(kernel: Kernel) -> Timer:
    """Events, or graphs when an eager call is under GRAPH_THRESHOLD_S (a staged kernel,
    which synchronizes inside, always gets events)."""
    gpu = CudaDevice()
    events = EventTimer(gpu)
    if kernel.stage_times is not None:
        return events
    estimate = eager_estimate(kernel, gpu)
    if GRAPH_THRESHOLD_S <= estimate < 10 * GRAPH_THRESHOLD_S:  # a host stall reads long
        estimate = min(estimate, eager_estimate(kernel, gpu))
    return GraphTimer(gpu, fallback=events) if estimate < GRAPH_THRESHOLD_S else events
