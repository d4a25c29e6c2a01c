"""Whether a bench needs an optional dependency missing here, told from its fields alone:
`list` imports no bench code (ADR 0004's addendum), so an op's or a kernel's own import
cannot say it."""

from __future__ import annotations

from kernbench.kernels import NEEDS_TORCH
from kernbench.kernels.tensors import torch_missing
from kernbench.spec.models import Bench


def missing_extra(bench: Bench) -> tuple[tuple[str, ...], str] | None:
    """The field that makes `bench` need torch, and why torch is not here; None where it
    is, or where no field says so. An op works on torch tensors; a built-in kernel in
    NEEDS_TORCH needs it for every cell; kernbench reaches a CUDA device through torch. A
    bench's own kernel module that imports torch only to build a cell cannot be told so."""
    field = _needs_torch_at(bench)
    missing = torch_missing() if field is not None else None
    return (field, missing) if field is not None and missing is not None else None


def _needs_torch_at(bench: Bench) -> tuple[str, ...] | None:
    if bench.op is not None:
        return ("op",)
    if bench.kernel in NEEDS_TORCH:
        return ("kernel",)
    return ("requires", "device") if bench.requires.device == "cuda" else None
