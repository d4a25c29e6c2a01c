"""Which of a bench's fields changed since results were taken with it, and which matter."""

from __future__ import annotations

from collections.abc import Sequence

from kernbench.spec.models import as_current_model

# Bench fields that change what is measured; the others only change how it is shown.
PRESENTATION_FIELDS = ("description", "figures", "data", "ab")
# Fields that results are computed with from the samples, again by `collect` and by
# `--resume`: a run whose bench changed only in these (and the above) is rebuilt.
REBUILT_FIELDS = ("metrics", "hardware", "model")


def spec_drift(measured: dict, current: dict, also_ignored: Sequence[str] = ()) -> list[str]:
    """The measurement fields of a bench that changed since its results were taken (the
    recorded bench read as this kernbench's model reads it: `as_current_model`)."""
    measured = as_current_model(measured)
    fields = (set(measured) | set(current)) - set(PRESENTATION_FIELDS) - set(also_ignored)
    return sorted(f for f in fields if measured.get(f) != current.get(f))
