"""Keeping a GPU busy for a while: a spinning kernel, so that work the host enqueues
meanwhile runs back to back, without launch gaps. Used by the CUDA timers (through
`timing.cuda_device.CudaDevice.hold`) and by the collective kernel's own batches."""

from __future__ import annotations

MAX_HOLD_S = 50e-3
HOLD_CLOCK_HZ = 2.0e9  # torch.cuda._sleep counts cycles; at lower clocks it holds longer


def hold(seconds: float) -> None:
    """Spin the current stream for about `seconds` (at most MAX_HOLD_S)."""
    import torch  # lazy: torch is optional

    torch.cuda._sleep(int(min(seconds, MAX_HOLD_S) * HOLD_CLOCK_HZ))
