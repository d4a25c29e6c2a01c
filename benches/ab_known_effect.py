"""The kernel of benches/ab-known-effect.yaml: a batched GEMM that KB_EXTRA_WORK=1 makes do
a known amount of extra work.

One call is torch.bmm over the whole batch (bf16 on cuda, fp32 on one cpu thread). With the
switch on, a variant with `extra_pct` > 0 adds a second bmm over the first
round(batch * extra_pct / 100) matrices of the batch: that share of the work, exactly
in flops. Its share of the time is near it only where the slice fills the device; for
small matrices the second launch costs more than its flops (scripts/ab_reference.py
measures the true effect). The control (`extra_pct: 0`) runs the same code either way.
The switch is read here, by name, so `kernbench ab` finds it in the kernel's source.
"""

from __future__ import annotations

import os
from typing import Any

from kernbench.dtypes import TOLERANCE
from kernbench.kernels.base import CheckResult, Kernel

SWITCH = "KB_EXTRA_WORK"
STORAGE = ("bf16", "fp16", "fp32")


def extra_matrices(batch: int, extra_pct: float) -> int:
    """Matrices of the extra bmm: the batch's `extra_pct` percent, at least one if any."""
    if extra_pct <= 0:
        return 0
    return min(batch, max(1, round(batch * extra_pct / 100)))


def make(
    batch: int,
    M: int,
    N: int,
    K: int,
    extra_pct: float = 0.0,
    dtype: str = "bf16",
    device: str = "cuda",
) -> Kernel:
    import torch

    if dtype not in STORAGE:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(STORAGE)}")
    if device == "cpu":
        # One thread: a parallel region waits for its slowest thread, so on a busy machine
        # every extra bmm would add a stall unrelated to its work.
        torch.set_num_threads(1)
    extra = extra_matrices(batch, extra_pct) if os.environ.get(SWITCH, "0") == "1" else 0
    gemm = BatchedGemm(batch, M, N, K, dtype, device, extra)
    return Kernel(
        run=gemm.run,
        check=gemm.check,
        synchronize=torch.cuda.synchronize if device == "cuda" else None,
        info={
            "implementation": "torch.bmm",
            "torch": torch.__version__,
            "extra_matrices": extra,
            "extra_work_pct": 100.0 * extra / batch,
        },
    )


class BatchedGemm:
    """A (batch, M, K) @ B (batch, K, N) -> C, plus C' = A[:extra] @ B[:extra] when extra."""

    def __init__(
        self, batch: int, M: int, N: int, K: int, dtype: str, device: str, extra: int
    ) -> None:
        import torch

        self.torch = torch
        self.dtype = dtype
        storage = getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}.get(dtype, "float32"))
        self.a = torch.empty((batch, M, K), dtype=storage, device=device)
        self.b = torch.empty((batch, K, N), dtype=storage, device=device)
        self.c = torch.empty((batch, M, N), dtype=storage, device=device)
        self.extra = extra
        self.extra_c = torch.empty((extra, M, N), dtype=storage, device=device)
        self.redraw()

    def redraw(self) -> None:
        """Standard-normal operands in place: never time on zeros."""
        for operand in (self.a, self.b):
            operand.copy_(self.torch.randn(operand.shape, device=operand.device))

    def run(self) -> None:
        torch = self.torch
        torch.bmm(self.a, self.b, out=self.c)
        if self.extra:
            torch.bmm(self.a[: self.extra], self.b[: self.extra], out=self.extra_c)

    def check(self) -> CheckResult:
        """Fresh operands, NaN-poisoned outputs, one call, error against float64."""
        torch = self.torch
        self.redraw()
        self.c.fill_(float("nan"))
        self.extra_c.fill_(float("nan"))
        self.run()
        if self.c.is_cuda:
            torch.cuda.synchronize()
        reference = torch.bmm(self.a.double(), self.b.double())
        error = _rel_err(self.c, reference)
        if self.extra:
            error = max(error, _rel_err(self.extra_c, reference[: self.extra]))
        return CheckResult(rel_err=error, tolerance=TOLERANCE[self.dtype])


def _rel_err(out: Any, reference: Any) -> float:
    difference = out.double() - reference
    return float(difference.norm() / reference.norm())
