"""The kernel of benches/ab-synthetic.yaml: a CPU busy-wait that KB_DEMO_SLOW=1 slows by 10 %.

The switch is read here, by name, so `kernbench ab` finds it in the kernel's source.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from kernbench.kernels.synthetic import spin

SLOWDOWN = 1.10


def make(work_us: float, chunks: int = 1, device: str = "cpu") -> Callable[[], None]:
    """A host busy-wait: `device` changes nothing."""
    slow = os.environ.get("KB_DEMO_SLOW", "0") == "1"
    chunk_s = work_us * 1e-6 * (SLOWDOWN if slow else 1.0) / chunks

    def run() -> None:
        for _ in range(chunks):
            spin(chunk_s)

    return run
