"""Timers: `choose_timer` picks one for a kernel, device and timer spec."""

from __future__ import annotations

from kernbench.kernels.base import Kernel
from kernbench.spec.models import TimerSpec
from kernbench.timing import cuda
from kernbench.timing.base import Measurement, Timer
from kernbench.timing.cpu import CpuTimer
from kernbench.timing.ranks import RanksTimer
from kernbench.timing.stop import StopReason, StopRule, stop_reason


def choose_timer(kernel: Kernel, spec: TimerSpec, device: str) -> Timer:
    """The ranks timer for a kernel run by several ranks; else the CUDA timers on CUDA
    (unless the spec asks for the CPU timer), the CPU timer otherwise."""
    if kernel.ranks is not None:
        return RanksTimer()
    if device == "cuda" and spec.kind != "cpu":
        return cuda.choose_timer(kernel, spec, device)
    return CpuTimer()


__all__ = ["Measurement", "StopReason", "StopRule", "Timer", "choose_timer", "stop_reason"]
