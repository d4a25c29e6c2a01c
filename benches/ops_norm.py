"""The kernel of benches/ops-norm.yaml: softmax, layer_norm and rms_norm forward over the
last dimension of a [rows, hidden] tensor, run by torch eagerly (torch.nn.functional),
under torch.compile, or by this module's one-pass Triton row kernels (ADR 0074).

A Triton program owns one row: it loads the row once into registers, reduces it in fp32
and stores the result once, so each byte the bench's `bytes` counts moves once. The row
must fit in registers (MAX_TRITON_HIDDEN); no autotuning: the launch is a function of the
row length alone.

No `from __future__ import annotations` here: @triton.jit reads `tl.constexpr` annotations.
"""

import math
import os
from collections.abc import Callable
from typing import Any, Literal

from kernbench.dtypes import TOLERANCE, TORCH_NAMES
from kernbench.kernels.backends import BackendUnavailable, prepare
from kernbench.kernels.base import CheckResult, Kernel, Positive

try:  # CUDA builds of torch bring triton; only the triton variant needs it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

Op = Literal["softmax", "layer_norm", "rms_norm"]
Backend = Literal["torch", "compile", "triton"]
OPS = {  # what each op's eager and reference call is
    "softmax": "torch.nn.functional.softmax",
    "layer_norm": "torch.nn.functional.layer_norm",
    "rms_norm": "torch.nn.functional.rms_norm",
}
LAYER_NORM_EPS = 1e-5  # torch's default
RMS_NORM_EPS = 1e-6  # torch's default is the dtype's epsilon, which differs by dtype
# A row lives in a program's registers, about 128 a thread at 16 warps. At 16384 a thread
# holds 32 of the row's values, and layer_norm keeps three such (the centred row, weight
# and bias) live; at 32768 that is ~192, past the registers, so it would spill and no
# longer be one pass. 16384 is also the longest row measured (H200, 2026-12-03), where bf16
# layer_norm already fell to ~2500 GB/s from ~3900 at 8192: perhaps spilling there too.
# A longer row is refused rather than timed as what it may not be.
MAX_TRITON_HIDDEN = 16384


def make(
    op: Op,
    rows: Positive,
    hidden: Positive,
    backend: Backend,
    dtype: Literal["fp32", "bf16", "fp16"],
    device: str,
) -> Kernel:
    import torch

    if backend == "triton":
        _triton_can_run(hidden, device)
    generator = torch.Generator(device=device).manual_seed(0)
    options = {"dtype": getattr(torch, TORCH_NAMES[dtype]), "device": device}

    def randn(*shape: int) -> Any:
        return torch.randn(shape, generator=generator, **options)

    x = randn(rows, hidden)
    # Near a trained model's: a scale about 1, a small shift.
    weight = None if op == "softmax" else 1 + 0.1 * randn(hidden)
    bias = 0.1 * randn(hidden) if op == "layer_norm" else None
    info: dict[str, Any] = {"op": OPS[op], "backend": backend}
    if backend == "triton":
        run = _triton_call(op, x, weight, bias, info)
        close = None
    else:
        function = _functional(op)
        prepared = prepare(backend, lambda: function(x, weight, bias))
        run, close = prepared.run, prepared.close
    kernel = Kernel(
        run=run,
        check=lambda: _check(run, op, x, weight, bias, dtype),
        close=close,
        info=info,
    )
    if device == "cuda":
        kernel.synchronize = torch.cuda.synchronize
    return kernel


def _functional(op: str) -> Callable[[Any, Any, Any], Any]:
    """The op as torch.nn.functional computes it, on (x, weight, bias)."""
    import torch.nn.functional as F

    if op == "softmax":
        return lambda x, weight, bias: F.softmax(x, dim=-1)
    if op == "layer_norm":
        return lambda x, weight, bias: F.layer_norm(
            x, x.shape[-1:], weight, bias, eps=LAYER_NORM_EPS)
    return lambda x, weight, bias: F.rms_norm(x, x.shape[-1:], weight, eps=RMS_NORM_EPS)


def _check(
    run: Callable[[], Any], op: str, x: Any, weight: Any, bias: Any, dtype: str
) -> CheckResult:
    """The output against torch.nn.functional's on float64 copies of the inputs."""
    out = run()
    reference = _functional(op)(*(None if t is None else t.double() for t in (x, weight, bias)))
    error = float((out.double() - reference).norm()) / float(reference.norm())
    return CheckResult(
        rel_err=error if math.isfinite(error) else math.inf, tolerance=TOLERANCE[dtype]
    )


def _triton_can_run(hidden: int, device: str) -> None:
    """Fails the cell, with why, where the triton variant cannot run it."""
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if device != "cuda" and not interpreted:
        raise BackendUnavailable(
            f"backend triton runs on cuda, not {device} (on a CPU only under "
            "TRITON_INTERPRET=1, Triton's interpreter)")
    if triton is None:
        raise BackendUnavailable(
            "backend triton: cannot import triton; pip install 'kernbench[gpu]' on a CUDA machine")
    if hidden > MAX_TRITON_HIDDEN:
        raise BackendUnavailable(
            f"backend triton holds a row in registers: hidden {hidden} is over "
            f"{MAX_TRITON_HIDDEN}, the longest row measured to fit")


def warps_for(block: int) -> int:
    """Warps of a program of `block` elements: 8 or more elements a thread (one 16-byte
    load of bf16), up to 16 warps, whose 512 threads then hold 32 each at 16384."""
    return min(16, max(4, block // 256))


def _triton_call(
    op: str, x: Any, weight: Any, bias: Any, info: dict[str, Any]
) -> Callable[[], Any]:
    """A call of the op's row kernel, one program per row, into an output made once (as
    torch's caching allocator hands eager calls theirs, without a device allocation)."""
    import torch

    rows, hidden = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(hidden)
    warps = warps_for(block)
    info.update(triton_block=block, triton_warps=warps)
    grid = (rows,)
    if op == "softmax":
        def call() -> Any:
            _softmax_rows[grid](x, out, hidden, BLOCK=block, num_warps=warps)
            return out
    elif op == "layer_norm":
        def call() -> Any:
            _layer_norm_rows[grid](x, out, weight, bias, hidden, LAYER_NORM_EPS,
                                   BLOCK=block, num_warps=warps)
            return out
    else:
        def call() -> Any:
            _rms_norm_rows[grid](x, out, weight, hidden, RMS_NORM_EPS,
                                 BLOCK=block, num_warps=warps)
            return out
    call()  # compiles now, while the cell is prepared
    return call


if triton is not None:

    @triton.jit
    def _softmax_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        start = tl.program_id(0).to(tl.int64) * n  # rows * n may pass 2**31
        cols = tl.arange(0, BLOCK)
        inside = cols < n
        x = tl.load(x_ptr + start + cols, mask=inside, other=float("-inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))  # the lanes past n: exp(-inf) = 0
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + start + cols, y.to(out_ptr.dtype.element_ty), mask=inside)

    @triton.jit
    def _layer_norm_rows(x_ptr, out_ptr, w_ptr, b_ptr, n, eps, BLOCK: tl.constexpr):
        start = tl.program_id(0).to(tl.int64) * n
        cols = tl.arange(0, BLOCK)
        inside = cols < n
        x = tl.load(x_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / n
        centred = tl.where(inside, x - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(centred * centred, axis=0) / n + eps)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        y = centred * rstd * w + b
        tl.store(out_ptr + start + cols, y.to(out_ptr.dtype.element_ty), mask=inside)

    @triton.jit
    def _rms_norm_rows(x_ptr, out_ptr, w_ptr, n, eps, BLOCK: tl.constexpr):
        start = tl.program_id(0).to(tl.int64) * n
        cols = tl.arange(0, BLOCK)
        inside = cols < n
        x = tl.load(x_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n + eps)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        y = x * rstd * w
        tl.store(out_ptr + start + cols, y.to(out_ptr.dtype.element_ty), mask=inside)
