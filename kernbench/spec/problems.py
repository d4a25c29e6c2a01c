"""A problem a model's own validator finds at one of its fields (a zip group, `inputs` of
a kernel bench, a collective's timer kind): pydantic reports such a problem at the model,
so the validator raises it with the field's path, and the loader reports it at that field's
line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kernbench.spec.figures import COLLECTIVE_KERNEL

# The collective kernel is timed by its ranks (timing/ranks.py) whatever a kind names: its
# duty and l2, its `api` and its capture mode choose how (ADR 0042), so it takes auto only.
COLLECTIVE_TIMER_KINDS = ("auto",)


class FieldProblem(ValueError):
    """`message` about the field at `field` (keys, and list indices as ints) below the
    model that raised it."""

    def __init__(self, field: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.field = field


def check_zip(axes: Mapping[str, Sequence[object]], groups: Sequence[Sequence[str]]) -> None:
    """Each zip group names axes, each axis in one group, of equal lengths."""
    seen: set[str] = set()
    for index, group in enumerate(groups):
        for place, axis in enumerate(group):
            if axis in seen:
                raise FieldProblem(("zip", index, place), f"axis {axis!r} is in two zip groups")
            if axis not in axes:
                raise FieldProblem(("zip", index, place),
                                   f"zip names {axis!r}, which is not an axis")
            seen.add(axis)
        if len({len(axes[axis]) for axis in group}) > 1:
            raise FieldProblem(("zip", index), f"zipped axes {list(group)} have different lengths")


def check_collective_timer(kernel: str | None, kind: str) -> None:
    """A collective bench names no timer kind its ranks timer would ignore."""
    if kernel == COLLECTIVE_KERNEL and kind not in COLLECTIVE_TIMER_KINDS:
        raise FieldProblem(("timer", "kind"), f"the collective kernel is timed by its ranks, "
                           f"not by {kind}: use auto (duty and l2 choose how its samples "
                           "are taken)")
