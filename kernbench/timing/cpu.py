"""The CPU timer: perf_counter_ns around each call, sampled until the stop rule says enough."""

from __future__ import annotations

import time
from collections.abc import Callable

from kernbench.kernels.base import Kernel
from kernbench.spec.models import TimerSpec
from kernbench.timing.base import Measurement
from kernbench.timing.stop import StopReason, StopRule


class CpuTimer:
    name = "cpu"

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self._clock = clock

    def measure(self, kernel: Kernel, spec: TimerSpec) -> Measurement:
        clock = self._clock
        run = kernel.run
        sync = kernel.synchronize or (lambda: None)

        warmup_calls = 0
        deadline = clock() + int(spec.warmup_s * 1e9)
        while warmup_calls == 0 or clock() < deadline:
            run()
            sync()
            warmup_calls += 1

        samples: list[float] = []
        stages: dict[str, list[float]] = {name: [] for name in kernel.stages}
        rule = StopRule(spec)
        # The budget is wall time of sampling, not the sum of samples: for tiny kernels the
        # loop's own cost dominates, and the run-time estimate must hold for them too.
        sampling_began = clock()
        reason: StopReason | None = None
        while reason is None:
            start = clock()
            run()
            sync()
            end = clock()
            samples.append((end - start) * 1e-9)
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
        )
