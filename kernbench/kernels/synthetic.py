"""The built-in `sleep` kernel: a CPU busy-wait whose duration the test and demo set.

It exists to test methods (A/B verdicts, failure handling) against a known truth: a
cell takes `work_us` microseconds per call times `scale` (a variant's, for an A/B of two
variants), `effect_pct` percent longer when the environment variable named by `switch`
is "1", and raises in round `fail_round`. It takes any axis (a bench may add axes only
to make cells), but a variant's options only from those.
The wait spins on perf_counter rather than calling time.sleep, whose wake-up latency
is coarse and scheduler-dependent; a spin is as long as asked, give or take preemption.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from kernbench.kernels.base import PositiveReal
from kernbench.worker_env import ROUND_ENV


def spin(seconds: float) -> None:
    """Busy-wait `seconds` on the high-resolution clock."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def options_problem(options: Mapping[str, Any]) -> str | None:
    """A variant option `make_sleep` does not take, which would change nothing; `validate`
    calls this with each variant's options (spec/checks.py)."""
    taken = [name for name in inspect.signature(make_sleep).parameters if name != "_"]
    unknown = [name for name in options if name not in taken]
    if not unknown:
        return None
    return f"no option {unknown[0]!r}; a variant sets only {', '.join(taken)}"


def make_sleep(
    work_us: PositiveReal = 100.0,
    switch: str | None = None,
    effect_pct: float = 0.0,
    fail_round: int | None = None,
    scale: PositiveReal = 1.0,
    **_: Any,  # the other cell parameters (device, axes the bench adds) change nothing
) -> Callable[[], None]:
    if work_us <= 0 or scale <= 0:
        raise ValueError(f"work_us and scale must be positive, not {work_us} and {scale}")
    if fail_round is not None and os.environ.get(ROUND_ENV) == str(fail_round):
        raise RuntimeError(f"synthetic failure in round {fail_round}")
    seconds = work_us * scale * 1e-6
    if switch and os.environ.get(switch) == "1":
        seconds *= 1 + effect_pct / 100

    def run() -> None:
        spin(seconds)

    return run
