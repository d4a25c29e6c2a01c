"""What every part of a calibration (GEMM, memory, host ceilings) shares: the sizes and
timers it measures with, and the two ways it times: a CUDA kernel as a worker times a
cell (`Sampler`), a CPU call by the median of repeated calls (`median_seconds`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kernbench.kernels.base import Kernel
from kernbench.spec.fields import Scalar
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import Measurement, choose_timer

# A sweep cell's timer, as milestone-1h-gemm's (tests/test_calibrate.py holds them equal).
SWEEP_TIMER = TimerSpec(warmup_s=0.05, budget_s=0.3, min_time_s=0.2, rel_ci=0.01,
                        min_samples=5, turns=4)
# The copies: long samples, no turns (a copy method is one rate a round).
COPY_TIMER = TimerSpec(warmup_s=0.2, budget_s=2.0, min_samples=10, rel_ci=0.005)
TIMED_BY = {"event": "CUDA events", "cupti": "CUPTI's kernel records"}


@dataclass(frozen=True)
class Sizes:
    gemm: int = 8192  # M = N = K of the CUDA GEMMs
    cpu_gemm: int = 2048
    # Device-to-device copies, each buffer (the large ones): on an H200 a copy's rate still
    # grows from 2 GiB (4283 GB/s) to 4 GiB (4303, ops-norm's best cell in the same call);
    # a device too small for four such buffers gets less (calibrate_memory.fitted_copy_bytes).
    copy_bytes: int = 4 << 30
    small_copy_bytes: int = 256 << 20  # the torch copy_ of a size the L2 still cannot hold
    host_bytes: int = 1 << 30  # host<->device copies, each direction
    cpu_copy_bytes: int = 256 << 20
    reps: int = 10  # timed repetitions (CPU) / minimum samples of the CUDA copies
    # How the CUDA GEMMs are sampled: a bench's utilization is read against ceilings taken
    # the way its own cells are (its duty, ADR 0036 addendum; its warm-up, budget and
    # turns, ADR 0049). `kernbench calibrate --bench NAME` passes that bench's timer.
    timer: TimerSpec = field(default_factory=lambda: SWEEP_TIMER)
    rounds: int = 3
    seed: int = 0

    @property
    def duty(self) -> str:
        return self.timer.duty

    def copy_timer(self) -> TimerSpec:
        """The copies' timer, under the GEMMs' duty."""
        return COPY_TIMER.model_copy(update={"duty": self.duty, "min_samples": self.reps})


@dataclass
class Part:
    """One part's measurement: its text for the profile's `method`, and its notes."""

    method: str
    notes: dict[str, Scalar] = field(default_factory=dict)


class Sampler:
    """Times CUDA kernels as a worker times a cell's turns: by the timer `choose_timer`
    gives a kernel, then by the one its first visit was taken with (kernels live on
    through the rounds, so their ids stay theirs); remembers the timers that took samples
    (cupti may fall back)."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self._first: dict[int, str] = {}

    def measure(self, kernel: Kernel, visit: TimerSpec) -> Measurement:
        chosen = self._first.get(id(kernel))
        measured = choose_timer(kernel, visit, "cuda", chosen).measure(kernel, visit)
        self.used.add(measured.timer)
        self._first.setdefault(id(kernel), measured.timer)
        return measured

    def samples_of(self, kernel: Kernel, visit: TimerSpec) -> list[float]:
        return self.measure(kernel, visit).samples_s

    def median_s(self, kernel: Kernel, visit: TimerSpec) -> float:
        return statistics.median(self.samples_of(kernel, visit))

    def timed_by(self) -> str:
        return " and ".join(TIMED_BY.get(name, name) for name in sorted(self.used))


def median_seconds(run: Callable[[], object], reps: int) -> float:
    """A CPU call's median seconds over `reps` calls, after one warm-up call."""
    run()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
