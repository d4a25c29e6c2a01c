"""The timer interface and what one measurement holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.stop import StopReason


@dataclass
class Measurement:
    timer: str  # its `name`: a key of spec.timer_model.TIMERS, or "collective" (timing.ranks)
    samples_s: list[float]  # every raw sample, in the order taken, seconds per call
    warmup_calls: int
    stop_reason: StopReason
    stages_s: dict[str, list[float]] = field(default_factory=dict)  # per-sample stage times
    sm_clock_mhz: list[float] = field(default_factory=list)  # where the timer can read it
    throttled: list[bool] = field(default_factory=list)  # per sample, where readable
    extra: dict[str, Any] = field(default_factory=dict)
    duty: str | None = None  # "sustained" or "isolated" (timing.steady); None: not applied
    settle: dict[str, Any] | None = None  # timing.steady.Settle, where the timer settles
    blocks: list[dict[str, Any]] = field(default_factory=list)  # timing.steady.Block each


class Timer(Protocol):
    name: str

    def measure(self, kernel: Kernel, spec: TimerSpec) -> Measurement: ...
