"""The CPU timer: perf_counter_ns around a loop of calls, sampled until the stop rule says
enough.

A sample times as many calls as it takes to last `min_sample_s` (calibrated once per cell
after the warm-up, through 1, 2, 5, 10, 20, 50, ... calls, as `timeit.Timer.autorange`
does) and records the time per call; the loop count is in the measurement's `extra`. A
call longer than that is timed alone, as is every call of a kernel with stages (its stage
times are per call) and every sample when the caller fixes the number of samples
(`min_samples == max_samples`: an interleaved A/B turn sizes itself in calls).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.base import Measurement
from kernbench.timing.stop import StopReason, StopRule

# A sample lasts at least this long, so the loop's own cost (two clock reads and the
# loop, about 0.1 µs) stays near 0.1% of it; a 1 µs call is timed 100 at a time.
MIN_SAMPLE_S = 1e-4
MAX_LOOPS = 1_000_000


class CpuTimer:
    name = "cpu"

    def __init__(
        self,
        clock: Callable[[], int] = time.perf_counter_ns,
        min_sample_s: float = MIN_SAMPLE_S,
        max_loops: int = MAX_LOOPS,
    ) -> None:
        self._clock = clock
        self.min_sample_s = min_sample_s
        self.max_loops = max_loops

    def measure(self, kernel: Kernel, spec: TimerSpec) -> Measurement:
        call = one_call(kernel)
        warmup_calls = self._warm_up(call, spec.warmup_s)
        loops = self._loops(call, kernel, spec)

        clock = self._clock
        samples: list[float] = []
        stages: dict[str, list[float]] = {name: [] for name in kernel.stages}
        rule = StopRule(spec)
        # The budget is wall time of sampling, not the sum of samples: for tiny kernels the
        # loop's own cost dominates, and the run-time estimate must hold for them too.
        sampling_began = clock()
        reason: StopReason | None = None
        while reason is None:
            start = clock()
            for _ in itertools.repeat(None, loops):
                call()
            end = clock()
            samples.append((end - start) * 1e-9 / loops)
            if kernel.stage_times is not None:
                for name, seconds in kernel.stage_times().items():
                    stages.setdefault(name, []).append(seconds)
            reason = rule.check(samples, (end - sampling_began) * 1e-9)
        return Measurement(
            timer=self.name,
            samples_s=samples,
            warmup_calls=warmup_calls,
            stop_reason=reason,
            stages_s=stages,
            extra={"loops": loops},
        )

    def _warm_up(self, call: Callable[[], object], warmup_s: float) -> int:
        clock = self._clock
        calls = 0
        deadline = clock() + int(warmup_s * 1e9)
        while calls == 0 or clock() < deadline:
            call()
            calls += 1
        return calls

    def _loops(self, call: Callable[[], object], kernel: Kernel, spec: TimerSpec) -> int:
        """Calls per sample: the first of 1, 2, 5, 10, ... whose loop lasts `min_sample_s`."""
        if kernel.stages or spec.min_samples == spec.max_samples or self.min_sample_s <= 0:
            return 1
        target_ns = self.min_sample_s * 1e9
        for loops in loop_counts(self.max_loops):
            if self._time_loop(call, loops) >= target_ns:
                return loops
        return self.max_loops

    def _time_loop(self, call: Callable[[], object], loops: int) -> int:
        clock = self._clock
        start = clock()
        for _ in itertools.repeat(None, loops):
            call()
        return clock() - start


def one_call(kernel: Kernel) -> Callable[[], object]:
    """One call as the timer sees it: the kernel's run, and its synchronize if it has one."""
    run, sync = kernel.run, kernel.synchronize
    if sync is None:
        return run

    def run_and_sync() -> None:
        run()
        sync()

    return run_and_sync


def loop_counts(limit: int) -> Iterator[int]:
    """1, 2, 5, 10, 20, 50, ... up to `limit`, which ends the sequence."""
    for power in itertools.count():
        for step in (1, 2, 5):
            loops = step * 10**power
            if loops >= limit:
                yield limit
                return
            yield loops
