"""Timers: `choose_timer` picks one for a kernel, device and timer spec."""

from __future__ import annotations

import importlib

from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TIMERS, TimerSpec
from kernbench.timing import cuda, cupti
from kernbench.timing.base import Measurement, Timer
from kernbench.timing.cpu import CpuTimer
from kernbench.timing.cuda_device import current_gpu_clock
from kernbench.timing.ranks import RanksTimer
from kernbench.timing.stop import StopReason, StopRule, stop_reason


def choose_timer(
    kernel: Kernel, spec: TimerSpec, device: str, chosen: str | None = None
) -> Timer:
    """The ranks timer for a kernel run by several ranks; on CUDA the timer `spec.kind`
    names in the registry (`spec.timer_model.TIMERS`), or for "auto": CUPTI's kernel records for
    isolated samples where the profiler records CUDA activity (ADR 0048), otherwise events
    or graphs by the kernel's length (a staged kernel, which synchronizes inside, always
    gets events); the CPU timer otherwise. `chosen`: the timer an earlier measurement
    of the same cell used (its `Measurement.timer`); a registry name there replaces
    `spec.kind`, so a cell is timed one way through its rounds, turns and A/B sides."""
    if kernel.ranks is not None:
        return RanksTimer(current_gpu_clock() if device == "cuda" else None, device=device)
    if device != "cuda":
        return CpuTimer()
    kind = chosen if chosen in TIMERS else spec.kind
    if kind == "auto":
        if cupti.chosen_for(spec.duty, staged=kernel.stage_times is not None):
            return cupti.CuptiTimer()
        return cuda.choose_auto(kernel)
    if kind == "graph":  # as auto makes it: a capture that fails falls back to events
        return cuda.GraphTimer(fallback=cuda.EventTimer())
    module, _, name = TIMERS[kind].partition(":")
    timer: Timer = getattr(importlib.import_module(module), name)()
    return timer


__all__ = ["Measurement", "StopReason", "StopRule", "Timer", "choose_timer", "stop_reason"]
