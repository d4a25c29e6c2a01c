"""Timers: `choose_timer` picks one for a kernel, device and timer spec."""

from __future__ import annotations

from kernbench.kernels.base import Kernel
from kernbench.spec.models import TimerSpec
from kernbench.timing.base import Measurement, Timer


def choose_timer(kernel: Kernel, spec: TimerSpec, device: str) -> Timer:
    if device == "cuda" and spec.kind != "cpu":
        from kernbench.timing import cuda  # lazy: the CPU path never imports torch

        return cuda.choose_timer(kernel, spec, device)
    from kernbench.timing.cpu import CpuTimer

    return CpuTimer()


__all__ = ["Measurement", "Timer", "choose_timer"]
