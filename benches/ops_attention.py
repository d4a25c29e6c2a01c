"""The kernel of benches/ops-attention.yaml: torch's scaled_dot_product_attention forward,
run by one SDPA backend (math, flash, efficient, cudnn) per cell.

The backend is chosen with `torch.nn.attention.sdpa_kernel`, whose flags are
process-wide and cost ~60 us to set: far too slow for the timed call, so a cell selects
its backend when it is prepared and gives the flags back when it closes (ADR 0072). A
worker may hold several cells at once (timer.turns over 1): each call then checks, by
identity, that its own backend is the one selected, and selects it where another held
cell's is (once per change of cell, not per call).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any, Literal

from kernbench.dtypes import TOLERANCE, TORCH_NAMES
from kernbench.kernels.base import CheckResult, Kernel, Positive

Backend = Literal["math", "flash", "efficient", "cudnn"]
SDPA_BACKENDS = {  # the names of torch.nn.attention.SDPBackend
    "math": "MATH",
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
}
# How torch's CUDA warnings head each backend's reasons ("Flash attention kernel not used
# because:"), lowercased; a reason ends with where torch raised it, dropped here.
REASON_HEADERS = {
    "flash": "flash attention",
    "efficient": "memory efficient",
    "cudnn": "cudnn attention",
}
HEADER_END = "not used because:"
RAISED_AT = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?$")
# The reference materializes a (seq x seq) float64 score matrix per batch x head: a few
# at a time keep it under this many bytes (a 16384 sequence: one, 2 GiB).
REFERENCE_BYTES = 1 << 30


def make(
    batch: Positive,
    heads: Positive,
    seq: Positive,
    head_dim: Positive,
    causal: bool,
    backend: Backend,
    dtype: Literal["fp64", "fp32", "bf16", "fp16"],
    device: str,
) -> Kernel:
    import torch
    import torch.nn.functional as F

    generator = torch.Generator(device=device).manual_seed(0)
    shape = (batch, heads, seq, head_dim)
    q, k, v = (
        torch.randn(shape, dtype=getattr(torch, TORCH_NAMES[dtype]), device=device,
                    generator=generator)
        for _ in range(3)
    )
    sdpa = F.scaled_dot_product_attention

    def call() -> Any:
        return sdpa(q, k, v, is_causal=causal)

    _SELECTION.hold(backend)
    try:
        _first_call(call, backend, device)
    except BaseException:
        _SELECTION.release()
        raise

    def run() -> Any:
        if _SELECTION.current != backend:
            _SELECTION.select(backend)
        return call()

    kernel = Kernel(
        run=run,
        check=lambda: _check(run, q, k, v, causal, dtype),
        close=_SELECTION.release,
        info={"op": "torch.nn.functional.scaled_dot_product_attention", "sdpa_backend": backend},
    )
    if device == "cuda":
        kernel.synchronize = torch.cuda.synchronize
    return kernel


def _first_call(call: Callable[[], Any], backend: str, device: str) -> None:
    """One call while the cell is prepared: a backend that cannot run the cell fails it
    here, with torch's reasons (the warnings it gives on CUDA) rather than its bare
    "No available kernel"."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except RuntimeError as exc:
            reasons = _reasons([str(w.message) for w in caught], backend)
            detail = "; ".join(reasons) or " ".join(str(exc).split())
            raise RuntimeError(
                f"SDPA backend {backend} cannot run this cell on {device}: {detail}"
            ) from None


def _reasons(messages: list[str], backend: str) -> list[str]:
    """The reasons torch warned of for `backend`: those under its header, without the
    other (disabled) backends' or where torch raised each."""
    header = REASON_HEADERS.get(backend)
    mine: list[str] = []
    inside = False
    for message in messages:
        text = RAISED_AT.sub("", " ".join(message.split()))
        if text.endswith(HEADER_END):
            inside = header is not None and text.lower().startswith(header)
        elif inside:
            mine.append(text)
    return mine


def _check(
    run: Callable[[], Any], q: Any, k: Any, v: Any, causal: bool, dtype: str
) -> CheckResult:
    """The backend's output against the math backend's on float64 copies of the inputs."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out = run()
    batch, heads, seq, head_dim = q.shape
    rows = [t.double().reshape(batch * heads, seq, head_dim) for t in (q, k, v)]
    per_chunk = max(1, REFERENCE_BYTES // (seq * seq * 8))
    reference = torch.empty_like(rows[0])
    with sdpa_kernel(SDPBackend.MATH):  # leaves the cell's backend selected on exit
        for start in range(0, batch * heads, per_chunk):
            part = slice(start, start + per_chunk)
            reference[part] = F.scaled_dot_product_attention(
                rows[0][part], rows[1][part], rows[2][part], is_causal=causal
            )
    difference = float((out.double().reshape_as(reference) - reference).norm())
    error = difference / float(reference.norm())
    return CheckResult(
        rel_err=error if math.isfinite(error) else math.inf, tolerance=TOLERANCE[dtype]
    )


class _Selection:
    """The process's SDPA backend flags, shared by the cells held at once.

    At most one `sdpa_kernel` scope is open: entered when a held cell needs its backend,
    left before another is entered, and left for good when the last held cell closes,
    which restores the flags as they were before the first."""

    def __init__(self) -> None:
        self.holders = 0
        self.current: str | None = None
        self.scope: Any = None

    def hold(self, backend: str) -> None:
        self.holders += 1
        self.select(backend)

    def select(self, backend: str) -> None:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        self._leave()
        scope = sdpa_kernel(getattr(SDPBackend, SDPA_BACKENDS[backend]))
        scope.__enter__()
        self.scope, self.current = scope, backend

    def release(self) -> None:
        self.holders -= 1
        if self.holders == 0:
            self._leave()

    def _leave(self) -> None:
        if self.scope is not None:
            scope, self.scope, self.current = self.scope, None, None
            scope.__exit__(None, None, None)


_SELECTION = _Selection()
