"""What a collective's output must be: the inputs each rank is given, their exact result.

Rank r's input element i is ((i + r) % PATTERN_PERIOD) + 1: small integers, so sums stay
exact in every supported dtype while they stay under its largest exact integer
(EXACT_INTEGER), and the check compares bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kernbench.kernels import compare

PATTERN_PERIOD = 4  # inputs cycle through 1..PATTERN_PERIOD
# Largest integer each dtype holds exactly: sums under it make the check bit-exact.
EXACT_INTEGER = {
    "fp64": 2**53,
    "fp32": 2**24,
    "bf16": 2**8,
    "fp16": 2**11,
    "int32": 2**31 - 1,
    "int64": 2**63 - 1,
}


def exact(dtype: str, world_size: int) -> bool:
    """Whether every sum of the ranks' inputs is exact in `dtype`."""
    return PATTERN_PERIOD * world_size <= EXACT_INTEGER[dtype]


@dataclass(frozen=True)
class Expected:
    """One rank's view of a collective: `elements` in the whole message, `chunk` a rank's
    share, tensors of `torch_dtype` on `device`."""

    op: str
    world_size: int
    rank: int
    elements: int
    chunk: int
    torch_dtype: Any
    device: str

    def pattern(self, count: int, rank: int, offset: int = 0) -> Any:
        """Rank `rank`'s input elements offset..offset+count: ((i + rank) % P) + 1."""
        return self._pattern_int(count, rank, offset).to(self.torch_dtype)

    def _pattern_int(self, count: int, rank: int, offset: int) -> Any:
        import torch  # lazy: torch is optional

        wide = offset + count + rank >= 2**31
        index = torch.arange(
            offset, offset + count, device=self.device, dtype=torch.int64 if wide else torch.int32
        )
        return (index + rank) % PATTERN_PERIOD + 1

    def _summed(self, count: int, offset: int) -> Any:
        """Sum over all ranks of their inputs at offset..offset+count, rounded once."""
        import torch  # lazy: torch is optional

        # Every PATTERN_PERIOD consecutive ranks add 1 + 2 + ... + P to each element.
        cycles, rest = divmod(self.world_size, PATTERN_PERIOD)
        per_cycle = PATTERN_PERIOD * (PATTERN_PERIOD + 1) // 2
        total = torch.full((count,), cycles * per_cycle, dtype=torch.int32, device=self.device)
        for rank in range(rest):
            total += self._pattern_int(count, rank, offset)
        return total.to(self.torch_dtype)

    def output(self) -> Any:
        """This rank's output after the collective of every rank's pattern."""
        import torch  # lazy: torch is optional

        if self.op == "allreduce":
            return self._summed(self.elements, 0)
        if self.op == "allgather":
            parts = [self.pattern(self.chunk, rank) for rank in range(self.world_size)]
            return torch.cat(parts)
        return self._summed(self.chunk, self.rank * self.chunk)


def relative_error(output: Any, expected: Any) -> float:
    if output.shape != expected.shape:
        return math.inf
    return compare.relative_error(output, expected)
