"""Time between two recorded CUDA events, in seconds: torch's `Event.elapsed_time` (and
triton's `do_bench`) give milliseconds. Used by the CUDA timers and the kernels that time
their own stages or batches."""

from __future__ import annotations

from typing import Any

SECONDS_PER_MS = 1e-3


def elapsed_s(start: Any, end: Any) -> float:
    """Seconds from event `start` to event `end`, both recorded and complete."""
    return start.elapsed_time(end) * SECONDS_PER_MS
