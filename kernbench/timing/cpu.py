"""The CPU timer: perf_counter_ns around each call, sampled until the median is tight."""

from __future__ import annotations

import time

from kernbench.analyze import stats
from kernbench.kernels.base import Kernel
from kernbench.spec.models import TimerSpec
from kernbench.timing.base import Measurement, StopReason

# Checking the stop rule sorts every sample; do it every few samples, not every one.
_CHECK_EVERY = 8


class CpuTimer:
    name = "cpu"

    def __init__(self, clock: object = time.perf_counter_ns) -> None:
        self._clock = clock

    def measure(self, kernel: Kernel, spec: TimerSpec) -> Measurement:
        clock = self._clock
        run = kernel.run
        sync = kernel.synchronize or (lambda: None)

        warmup_calls = 0
        deadline = clock() + int(spec.warmup_s * 1e9)  # type: ignore[operator]
        while warmup_calls == 0 or clock() < deadline:  # type: ignore[operator]
            run()
            sync()
            warmup_calls += 1

        samples: list[float] = []
        stages: dict[str, list[float]] = {name: [] for name in kernel.stages}
        # The budget is wall time of sampling, not the sum of samples: for tiny kernels the
        # loop's own cost dominates, and the run-time estimate must hold for them too.
        budget_end = clock() + int(spec.budget_s * 1e9)  # type: ignore[operator]
        reason: StopReason = "max_samples"
        while len(samples) < spec.max_samples:
            start = clock()  # type: ignore[operator]
            run()
            sync()
            elapsed = clock() - start  # type: ignore[operator]
            samples.append(elapsed * 1e-9)
            if kernel.stage_times is not None:
                for name, seconds in kernel.stage_times().items():
                    stages.setdefault(name, []).append(seconds)
            if len(samples) < spec.min_samples:
                continue
            if len(samples) % _CHECK_EVERY == 0 and stats.rel_ci_halfwidth(samples) < spec.rel_ci:
                reason = "converged"
                break
            if clock() >= budget_end:  # type: ignore[operator]
                reason = "budget"
                break
        return Measurement(
            timer=self.name,
            samples_s=samples,
            warmup_calls=warmup_calls,
            stop_reason=reason,
            stages_s=stages,
        )
