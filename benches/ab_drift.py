"""The kernel of benches/ab-drift.yaml: a CPU busy-wait on a machine whose speed drifts.

Each call spins `work_us` times a slow wave of the wall clock, 1 + AMPLITUDE sin(2 pi t /
PERIOD_S), t from time.time() so that every process sees the same phase. KB_DRIFT_SLOW=1
makes the wait `effect_pct` percent longer. Runs seconds apart (the sequential A/B
schedule) land at unrelated phases, so their deltas scatter by up to 2 x AMPLITUDE; turns
milliseconds apart (the interleaved schedule) see nearly the same speed.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

from kernbench.kernels.synthetic import spin

SWITCH = "KB_DRIFT_SLOW"
AMPLITUDE = 0.05  # the wave's relative height
PERIOD_S = 4.0  # a few seconds: longer than a cell's sampling, shorter than a run


def speed_factor(now: float) -> float:
    """How much longer a call is at wall-clock time `now` than on average."""
    return 1.0 + AMPLITUDE * math.sin(2 * math.pi * now / PERIOD_S)


def make(work_us: float, effect_pct: float = 0.0, device: str = "cpu") -> Callable[[], None]:
    if work_us <= 0:
        raise ValueError(f"work_us must be positive, not {work_us}")
    slow = os.environ.get(SWITCH, "0") == "1"
    base_s = work_us * 1e-6 * (1 + effect_pct / 100 if slow else 1.0)

    def run() -> None:
        spin(base_s * speed_factor(time.time()))

    return run
