"""A streaming device-to-device copy in Triton, one of the copies the memory ceiling is
the best of (`execute/calibrate_memory.py`): each program copies one block of BLOCK
floats, 16-byte accesses per thread, the source read once (`evict_first`: no reuse).

Imported only when the memory ceiling is measured, so a machine without Triton imports it
never; no `from __future__ import annotations` here: @triton.jit reads `tl.constexpr`
annotations.
"""

from typing import Any

import triton
import triton.language as tl

BLOCK = 8192  # floats a program copies: 32 KiB, 32 a thread at 8 warps
WARPS = 8


@triton.jit
def _copy(source, target, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK  # past 2^31 floats at 8 GiB buffers
    offsets = start + tl.arange(0, BLOCK)
    inside = offsets < n
    values = tl.load(source + offsets, mask=inside, eviction_policy="evict_first")
    tl.store(target + offsets, values, mask=inside)


def copy(source: Any, target: Any) -> None:
    """`target[:] = source`, both contiguous CUDA tensors of one dtype and size."""
    n = source.numel()
    _copy[(triton.cdiv(n, BLOCK),)](source, target, n, BLOCK=BLOCK, num_warps=WARPS)
