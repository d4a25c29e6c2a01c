"""GEMM through cuBLAS (torch.matmul, torch._scaled_mm for fp8), operands resident or staged.

resident: A, B and C live on the GPU; one call is one matmul into a preallocated C.
staged: A and B start in host memory (pinned or pageable) and C ends there; one call is
copy in, multiply, copy out, each stage timed with CUDA events on the same stream.

tf32 is fp32 storage with `allow_tf32` on; fp32 is the same call with it off. The flag is
process-global and every cell of a round shares one worker process, so each call sets it
explicitly rather than trusting what the previous cell left.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from kernbench.dtypes import TOLERANCE, TORCH_NAMES
from kernbench.kernels.base import CheckResult, Kernel
from kernbench.kernels.events import elapsed_s

# cuBLAS chooses its own tile per shape; this is the nominal Hopper tile its large-GEMM
# kernels use (128x128 output, K step 64), good enough to mark shapes that cannot fill one.
NOMINAL_TILE = (128, 128, 64)
STAGES = ("h2d", "gemm", "d2h")
DTYPES = ("bf16", "fp16", "fp32", "tf32", "fp8")
FP8_MAX = 448.0  # largest finite float8 e4m3fn


def make(
    M: int,
    N: int,
    K: int,
    dtype: str = "bf16",
    device: str = "cuda",
    staging: str = "resident",
    host: str = "pinned",
) -> Kernel:
    import torch

    if device != "cuda":
        raise ValueError(f"gemm_cuda runs on cuda, not {device!r}")
    if dtype not in DTYPES:
        raise ValueError(f"cuBLAS gemm supports {', '.join(DTYPES)}, not {dtype!r}")
    if staging not in ("resident", "staged"):
        raise ValueError(f"unknown staging {staging!r}; known: resident, staged")
    if host not in ("pinned", "pageable"):
        raise ValueError(f"unknown host memory {host!r}; known: pinned, pageable")
    if dtype == "fp8":
        _require_fp8(torch)
    operands = Operands(M, N, K, dtype)
    matmul = operands.matmul
    info = provenance(dtype)
    info.update(staging=staging, host=host if staging == "staged" else None)
    if staging == "resident":
        return Kernel(
            run=matmul,
            check=_checker(operands, matmul, lambda: operands.c),
            tile=NOMINAL_TILE,
            synchronize=torch.cuda.synchronize,
            info=info,
        )
    staged = Staged(operands, pinned=host == "pinned")
    return Kernel(
        run=staged.run,
        check=_checker(operands, staged.run, lambda: staged.host_c),
        stages=STAGES,
        stage_times=staged.stage_times,
        tile=NOMINAL_TILE,
        synchronize=torch.cuda.synchronize,
        info=info,
    )


def _require_fp8(torch: Any) -> None:
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        raise RuntimeError(f"fp8 GEMM needs torch._scaled_mm; torch {torch.__version__} lacks it")
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) < (8, 9):
        raise RuntimeError(
            f"fp8 GEMM needs compute capability 8.9 or newer; this GPU is {major}.{minor}"
        )


class Operands:
    """A (M, K), B (K, N) and C (M, N) on the GPU, random (never zeros), redrawn on demand."""

    def __init__(self, M: int, N: int, K: int, dtype: str) -> None:
        import torch

        self.torch = torch
        self.dtype = dtype
        self.tf32 = dtype == "tf32"
        self.generator = torch.Generator(device="cuda")
        storage = getattr(torch, TORCH_NAMES[dtype])
        if dtype == "fp8":
            self.a = torch.empty((M, K), dtype=storage, device="cuda")
            # _scaled_mm wants B column-major: the transpose of a contiguous (N, K).
            self.b_rows = torch.empty((N, K), dtype=storage, device="cuda")
            self.b = self.b_rows.t()
            self.scale_a = torch.ones((), dtype=torch.float32, device="cuda")
            self.scale_b = torch.ones((), dtype=torch.float32, device="cuda")
            self.c = torch.empty((M, N), dtype=torch.bfloat16, device="cuda")
        else:
            self.a = torch.empty((M, K), dtype=storage, device="cuda")
            self.b = torch.empty((K, N), dtype=storage, device="cuda")
            self.c = torch.empty((M, N), dtype=storage, device="cuda")
        self.redraw()

    def redraw(self) -> None:
        """Fresh standard-normal operands in place (same storage, so captured graphs and
        staged host copies stay valid); fp8 with per-tensor scales from each amax."""
        torch = self.torch
        self.generator.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        if self.dtype != "fp8":
            self.a.copy_(torch.randn(self.a.shape, generator=self.generator, device="cuda"))
            self.b.copy_(torch.randn(self.b.shape, generator=self.generator, device="cuda"))
            return
        for target, scale in ((self.a, self.scale_a), (self.b_rows, self.scale_b)):
            values = torch.randn(target.shape, generator=self.generator, device="cuda")
            scale.copy_(values.abs().max() / FP8_MAX)
            target.copy_(values / scale)

    def matmul(self) -> None:
        torch = self.torch
        if self.dtype == "fp8":
            torch._scaled_mm(
                self.a, self.b, self.scale_a, self.scale_b, out_dtype=torch.bfloat16, out=self.c
            )
            return
        torch.backends.cuda.matmul.allow_tf32 = self.tf32
        torch.matmul(self.a, self.b, out=self.c)

    def reference(self) -> Any:
        """A @ B in float64 from the very operands the kernel read (fp8: dequantized)."""
        if self.dtype == "fp8":
            a = self.a.double() * self.scale_a.double()
            b = self.b.double() * self.scale_b.double()
            return a @ b
        return self.a.double() @ self.b.double()


class Staged:
    """Copy A and B in, multiply, copy C out; CUDA events between the stages."""

    def __init__(self, operands: Operands, pinned: bool) -> None:
        torch = operands.torch
        self.operands = operands
        self.pinned = pinned
        self.host_a = self._host(operands.a)
        self.host_b = self._host(operands.b_rows if operands.dtype == "fp8" else operands.b)
        self.host_c = torch.empty(operands.c.shape, dtype=operands.c.dtype, pin_memory=pinned)
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

    def reload(self) -> None:
        """Host copies of freshly drawn device operands (the check redraws them)."""
        ops = self.operands
        self.host_a.copy_(ops.a)
        self.host_b.copy_(ops.b_rows if ops.dtype == "fp8" else ops.b)

    def _host(self, tensor: Any) -> Any:
        host = self.operands.torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=self.pinned)
        host.copy_(tensor)
        return host

    def run(self) -> None:
        ops = self.operands
        blocking = not self.pinned
        start, copied_in, multiplied, copied_out = self.events
        start.record()
        ops.a.copy_(self.host_a, non_blocking=not blocking)
        (ops.b_rows if ops.dtype == "fp8" else ops.b).copy_(self.host_b, non_blocking=not blocking)
        copied_in.record()
        ops.matmul()
        multiplied.record()
        self.host_c.copy_(ops.c, non_blocking=not blocking)
        copied_out.record()

    def stage_times(self) -> dict[str, float]:
        start, copied_in, multiplied, copied_out = self.events
        copied_out.synchronize()
        return {
            "h2d": elapsed_s(start, copied_in),
            "gemm": elapsed_s(copied_in, multiplied),
            "d2h": elapsed_s(multiplied, copied_out),
        }


def _checker(
    operands: Operands,
    run: Callable[[], None],
    output: Callable[[], Any],
    reload: Callable[[], None] | None = None,
) -> Any:
    """Fresh operands, poisoned output, one call, relative error against float64."""

    def check() -> CheckResult:
        torch = operands.torch
        operands.redraw()
        if reload is not None:
            reload()
        out = output()
        out.fill_(float("nan"))
        operands.c.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        reference = operands.reference()
        result = out.to(device=reference.device, dtype=torch.float64)
        error = torch.linalg.norm(result - reference) / torch.linalg.norm(reference)
        return CheckResult(rel_err=float(error), tolerance=TOLERANCE[operands.dtype])

    return check


def provenance(dtype: str) -> dict[str, Any]:
    import torch

    matmul = torch.backends.cuda.matmul
    return {
        "implementation": "torch._scaled_mm (cuBLASLt)" if dtype == "fp8" else "torch.matmul",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device_name": torch.cuda.get_device_name(),
        "blas_library": str(torch.backends.cuda.preferred_blas_library()),
        "allow_tf32": dtype == "tf32",
        "fp16_reduced_precision_reduction": bool(matmul.allow_fp16_reduced_precision_reduction),
        "bf16_reduced_precision_reduction": bool(matmul.allow_bf16_reduced_precision_reduction),
        "tile_note": "nominal cuBLAS tile; the library picks its own per shape",
    }
