"""Comparing an op's result with its reference's: the check of an `op:` bench.

A result is a tensor, or a tuple of them (torch's named tuples such as topk's
`(values, indices)` included); `outputs` names the elements compared, by index or field
name (topk's indices are not worth comparing: ties may order them either way).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kernbench.kernels.base import CheckResult, CorrectnessError

Selector = int | str


def selected(result: Any, outputs: Sequence[Selector]) -> list[tuple[str, Any]]:
    """The (label, tensor) pairs of `result` to compare: every tensor when `outputs` is
    empty, else the elements it names."""
    if not isinstance(result, tuple | list):
        if outputs and list(outputs) != [0]:
            raise CorrectnessError(
                f"the op returned one tensor; outputs {list(outputs)} names more"
            )
        return [("0", result)]
    if not outputs:
        return [(str(i), item) for i, item in enumerate(result) if _is_tensor(item)]
    chosen = []
    for selector in outputs:
        try:
            item = result[selector] if isinstance(selector, int) else getattr(result, selector)
        except (IndexError, AttributeError):
            raise CorrectnessError(f"the op's result has no output {selector!r}") from None
        chosen.append((str(selector), item))
    return chosen


def compare(
    result: Any, reference: Any, outputs: Sequence[Selector], exact: bool, tolerance: float
) -> CheckResult:
    """The largest relative error over the selected outputs (exact: 0 when every output
    is equal, else infinity, against a tolerance of 0)."""
    ours, theirs = selected(result, outputs), selected(reference, outputs)
    worst = 0.0
    for (label, out), (_, ref) in zip(ours, theirs, strict=True):
        if tuple(out.shape) != tuple(ref.shape):
            raise CorrectnessError(
                f"output {label}: shape {tuple(out.shape)}, the reference's {tuple(ref.shape)}"
            )
        if exact:
            equal = out.dtype == ref.dtype and bool((out == ref).all())
            worst = max(worst, 0.0 if equal else math.inf)
        else:
            worst = max(worst, relative_error(out, ref))
    return CheckResult(rel_err=worst, tolerance=0.0 if exact else tolerance)


def relative_error(out: Any, ref: Any) -> float:
    """||out - ref|| / ||ref|| in float64 (||out - ref|| when the reference is all zeros);
    inf when that is not a finite number, so that a NaN output never passes: `max` over
    outputs would drop a NaN."""
    out64, ref64 = out.double(), ref.double()
    difference = float((out64 - ref64).norm())
    scale = float(ref64.norm())
    error = difference / scale if scale else difference
    return error if math.isfinite(error) else math.inf


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")
