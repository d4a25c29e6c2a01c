"""kernbench's own L2 flush kernel, for processes where a library has replaced torch's
operators (FlagGems' scope): there torch.sum or zero_() would run that library's kernel,
eagerly and inside graphs alike. A Triton launch goes through no dispatcher.

Imported only by `CudaDevice.flush` while a backend's scope is open; no
`from __future__ import annotations` here: @triton.jit reads `tl.constexpr` annotations.
"""

from typing import Any

import triton
import triton.language as tl

BLOCK = 4096  # floats a program reads (or zeroes): 16 KiB


@triton.jit
def _flush(buffer, partials, n, WRITE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    if WRITE:
        tl.store(buffer + offsets, tl.zeros((BLOCK,), dtype=tl.float32), mask=inside)
    else:
        values = tl.load(buffer + offsets, mask=inside, other=0.0)
        tl.store(partials + pid, tl.sum(values, axis=0))


def programs(n: int) -> int:
    """Programs (and partial sums) for a buffer of `n` floats."""
    return triton.cdiv(n, BLOCK)


def flush(buffer: Any, partials: Any, write: bool) -> None:
    """Read `buffer` whole, each program's sum into `partials` (a few KiB written, against
    the buffer's twice-L2 read), or zero it (`write`)."""
    n = buffer.numel()
    _flush[(programs(n),)](buffer, partials, n, WRITE=write, BLOCK=BLOCK)
