"""Keeping a GPU busy for a while: a spinning kernel, so that work the host enqueues
meanwhile runs back to back, without launch gaps; and how long to hold (`HostPace`).
Used by the CUDA timers (through `timing.cuda_device.CudaDevice.hold`) and by the
collective kernel's own batches.

Before a batch, the GPU spins while the host enqueues it (as nvbench's blocking kernel):
otherwise a host stall lets the GPU reach a start event before its work is queued, and
the wait is timed. The hold is no longer than needed: an idle GPU runs cooler and clocks
higher than one under sustained load, which would flatter long kernels.
"""

from __future__ import annotations

import statistics
import weakref
from collections.abc import Sequence
from typing import Any

MAX_HOLD_S = 50e-3
HOLD_CLOCK_HZ = 2.0e9  # torch.cuda._sleep counts cycles; at lower clocks it holds longer
HOLD_MARGIN = 2.0
HOLD_LEAD_SAMPLES = 2  # the host stays this many samples ahead of the GPU
FIRST_HOLD_S = 1e-3  # before the host's enqueue time is known
FIRST_BATCH = 4  # samples in a batch before the host's enqueue time is known


def hold(seconds: float) -> None:
    """Spin the current stream for about `seconds` (at most MAX_HOLD_S)."""
    import torch  # lazy: torch is optional

    torch.cuda._sleep(int(min(seconds, MAX_HOLD_S) * HOLD_CLOCK_HZ))


class HostPace:
    """How long the host takes to enqueue one sample and the GPU to run one, from the
    batches so far: the hold must cover a short lead, plus whatever the host loses to the
    GPU over the batch when enqueueing is the slower side."""

    def __init__(self) -> None:
        self.host_s: float | None = None
        self.gpu_s = 0.0

    def enqueued(self, n: int, seconds: float) -> None:
        self.host_s = seconds / n

    def ran(self, samples_s: Sequence[float]) -> None:
        if samples_s:
            self.gpu_s = statistics.median(samples_s)

    def hold_for(self, n: int) -> float:
        if self.host_s is None:
            return FIRST_HOLD_S
        return HOLD_MARGIN * HOLD_LEAD_SAMPLES * self.host_s + self.catch_up_for(n)

    def catch_up_for(self, n: int) -> float:
        """What the host loses to the GPU over n samples (0 when the GPU is the slower),
        with the margin; unknown pace: a first hold."""
        if self.host_s is None:
            return FIRST_HOLD_S
        return HOLD_MARGIN * max(self.host_s - self.gpu_s, 0.0) * n

    def fitting(self, n: int) -> int:
        """The most of `n` samples (at least 1) one hold covers; FIRST_BATCH while the pace
        is unknown."""
        if self.host_s is None:
            return max(1, min(n, FIRST_BATCH))
        lead, per_sample = self.hold_for(0), self.catch_up_for(1)
        if per_sample == 0.0:
            return n
        return max(1, min(n, int((MAX_HOLD_S - lead) / per_sample)))


class KernelPace:
    """The pace of the kernel a timer measured last, carried into its next measurement of
    that kernel (an interleaved A/B times each cell in turns of ~5 ms): learned afresh,
    every turn would open with a hold of FIRST_HOLD_S and a batch of FIRST_BATCH."""

    def __init__(self) -> None:
        self._kernel: weakref.ref[Any] | None = None
        self._pace = HostPace()

    def of(self, kernel: Any) -> HostPace:
        if self._kernel is None or self._kernel() is not kernel:
            self._kernel, self._pace = weakref.ref(kernel), HostPace()
        return self._pace


class PastHold:
    """The batches the GPU reached before the host had queued them all: a mark recorded
    after each batch's hold had already passed when the host finished. Their samples may
    time the host's launches (reported as `batches_past_hold`, by the CUDA timers and the
    collectives alike)."""

    def __init__(self) -> None:
        self.batches = self.late = 0
        self._mark: Any = None

    def held(self, mark: Any) -> None:
        """Record `mark` (an event) right after a batch's hold."""
        mark.record()
        self._mark = mark

    def queued(self) -> None:
        """The batch is all queued: had the GPU passed its mark already?"""
        if self._mark is not None:
            self.batches += 1
            self.late += bool(self._mark.query())
            self._mark = None

    def info(self) -> dict[str, str]:
        return {"batches_past_hold": f"{self.late} of {self.batches}"} if self.batches else {}
