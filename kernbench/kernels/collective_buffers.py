"""A collective's buffers on one rank, and the slots its timed calls rotate through.

A batch of back-to-back collectives cannot flush the L2 between its calls. Under `l2:
cold` each call therefore works on the next of `slots` copies of the buffers, laid end to
end over at least ROTATION_L2_FACTOR times the device's L2, so no call finds its data where
an earlier one left it: what nccl-tests does when it shifts each iteration's buffers
through its largest size. With the same buffers every call, kernbench read 3-19% faster
than nccl-tests from 1 to 16 MiB on 2 H200s, where a rank's buffers fit in the 60 MiB L2,
and agreed within 1.5% from 32 MiB (docs/gpu-runs.md, eighth session). Slot 0 is the
buffers the correctness check uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Each buffer's slots span at least this many times the L2: a call's lines are evicted
# by the calls between two visits of its slot, whatever the replacement policy keeps.
ROTATION_L2_FACTOR = 2


def rotation_slots(buffer_bytes: int, l2_bytes: int, factor: int = ROTATION_L2_FACTOR) -> int:
    """Copies of a buffer of `buffer_bytes` needed to span `factor` times the L2 (1 when
    the L2 is unknown, 0, or smaller than one buffer already)."""
    if l2_bytes <= 0 or buffer_bytes <= 0:
        return 1
    return max(1, math.ceil(factor * l2_bytes / buffer_bytes))


@dataclass(frozen=True)
class _Strip:
    """One buffer's slots: `length` elements at `offset` in each `stride` of `region`."""

    region: Any
    stride: int
    offset: int
    length: int
    _base: int = field(init=False, repr=False)
    _itemsize: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Read once: `pointer` runs before every timed call through NCCL.
        object.__setattr__(self, "_base", int(self.region.data_ptr()))
        object.__setattr__(self, "_itemsize", int(self.region.element_size()))

    def view(self, slot: int) -> Any:
        start = slot * self.stride + self.offset
        return self.region[start : start + self.length]

    def pointer(self, slot: int) -> int:
        start = slot * self.stride + self.offset
        return self._base + start * self._itemsize


class Buffers:
    """The input and output of one rank's collective, `slots` times over.

    `op`: allreduce (one buffer, in place), allgather or reduce_scatter; `elements`: the
    whole message (nccl-tests' S); `chunk`: one rank's share; `own`: this rank's share's
    first element in the whole message; `empty(count)`: a new tensor of `count` elements.
    """

    def __init__(
        self,
        op: str,
        elements: int,
        chunk: int,
        own: int,
        inplace: bool,
        slots: int,
        empty: Callable[[int], Any],
    ) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots}")
        self.slots = slots
        full = _Strip(empty(slots * elements), elements, 0, elements)
        if op == "allreduce":
            self._input = self._output = full
        else:
            share = (
                _Strip(full.region, elements, own, chunk)
                if inplace
                else _Strip(empty(slots * chunk), chunk, 0, chunk)
            )
            self._input, self._output = (share, full) if op == "allgather" else (full, share)
        self.input, self.output = self.views(0)
        self._next = 0

    def views(self, slot: int) -> tuple[Any, Any]:
        return self._input.view(slot), self._output.view(slot)

    def pointers(self, slot: int) -> tuple[int, int]:
        return self._input.pointer(slot), self._output.pointer(slot)

    def next_slot(self) -> int:
        """The slot of the next rotating call (0, 1, ..., slots - 1, 0, ...)."""
        slot = self._next
        self._next = (slot + 1) % self.slots
        return slot

    def nbytes(self) -> int:
        """Bytes held, all slots (the input and output regions; one when in place)."""
        regions = {id(self._input.region): self._input.region,
                   id(self._output.region): self._output.region}
        return sum(r.numel() * r.element_size() for r in regions.values())
