"""A streaming device-to-device copy in Triton, one of the copies the memory ceiling is
the best of (`execute/calibrate_memory.py`): each program copies one block of BLOCK
floats, one 16-byte access per thread. Of 42 block and persistent copies timed on an H200
(scripts/triton_copy_configs.py, docs/memory-ceiling/h200-2026-12-04-triton-copy.log),
1024 floats at 8 warps read 4286 GB/s beside torch's copy_ at 4288; larger blocks read
3-4% less, and an `evict_first` load another 2-5% less, at every size.

Imported only when the memory ceiling is measured, so a machine without Triton imports it
never; no `from __future__ import annotations` here: @triton.jit reads `tl.constexpr`
annotations.
"""

from typing import Any

import triton
import triton.language as tl

BLOCK = 1024  # floats a program copies: 4 KiB, 4 a thread at 8 warps
WARPS = 8


@triton.jit
def _copy(source, target, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK  # past 2^31 floats at 8 GiB buffers
    offsets = start + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(target + offsets, tl.load(source + offsets, mask=inside), mask=inside)


def copy(source: Any, target: Any) -> None:
    """`target[:] = source`, both contiguous CUDA tensors of one dtype and size."""
    n = source.numel()
    _copy[(triton.cdiv(n, BLOCK),)](source, target, n, BLOCK=BLOCK, num_warps=WARPS)
