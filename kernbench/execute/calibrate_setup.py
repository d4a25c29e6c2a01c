"""What every part of a calibration (GEMM, memory, host ceilings) shares: the sizes and
timers it measures with, the two ways it times: a CUDA kernel as a worker times a cell
(`Sampler`), a CPU call by the median of repeated calls (`median_seconds`), and how the
parts' texts make the profile's `method` (`method_text`, and back: `method_parts`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
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


# How a profile's `method` joins its parts' texts, and then how they were timed, by kind:
# "GEMM; memory; host; CUDA events, L2 flushed, sustained duty" and "GEMM and memory,
# median of 10 after one warm-up call".
METHOD_JOINS = {"cuda": ("; ", "; "), "cpu": (" and ", ", ")}


def method_text(kind: str, parts: Sequence[str], timed: str) -> str:
    """The profile's `method`: the texts of the parts measured, then how they were timed."""
    between, before_timed = METHOD_JOINS[kind]
    return between.join(parts) + before_timed + timed


def method_parts(kind: str, text: str) -> tuple[list[str], str] | None:
    """`method_text`'s parts and timing read back from `text` (None for a text it did not
    write), such that `method_text` of them gives `text` again. Split only where no
    parenthesis is open: a part's text may hold a separator in one ("(a round's median;
    warm-up ...)")."""
    between, before_timed = METHOD_JOINS[kind]
    pieces = _split_outside_parentheses(text, before_timed)
    if len(pieces) < 2:
        return None
    head = before_timed.join(pieces[:-1])
    return _split_outside_parentheses(head, between), pieces[-1]


def _split_outside_parentheses(text: str, separator: str) -> list[str]:
    pieces, depth, start, at = [], 0, 0, 0
    while at < len(text):
        if depth == 0 and text.startswith(separator, at):
            pieces.append(text[start:at])
            at = start = at + len(separator)
            continue
        depth += {"(": 1, ")": -1}.get(text[at], 0)
        at += 1
    return [*pieces, text[start:]]


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
