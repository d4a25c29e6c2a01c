"""Which of a bench's fields changed since results were taken with it, and which matter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernbench.spec.models import Bench, as_current_model, same_bench

# What a note says of a bench changed only in fields computed from the measurements.
REBUILT_ONLY = "only in what is computed from the measurements"

# Bench fields that do not change what is measured: how it is shown, and (requires) which
# machines may run it; the others do.
PRESENTATION_FIELDS = ("description", "figures", "data", "ab", "requires")
# Fields that results are computed with from the samples, again by `collect` and by
# `--resume`: a run whose bench changed only in these (and the above) is rebuilt.
REBUILT_FIELDS = ("metrics", "rates", "hardware", "model")
# Fields a run, or an A/B, takes its own value of as it starts (run.json, ab-run.json): the
# bench's is only a default for the next one, so a change leaves one under way as it was.
STARTED_FIELDS = ("rounds",)


def spec_drift(measured: dict, current: dict, also_ignored: Sequence[str] = ()) -> list[str]:
    """The measurement fields of a bench that changed since its results were taken (the
    recorded bench read as this kernbench's model reads it: `as_current_model`)."""
    measured = as_current_model(measured)
    fields = (set(measured) | set(current)) - set(PRESENTATION_FIELDS) - set(also_ignored)
    return sorted(f for f in fields if measured.get(f) != current.get(f))



def bench_drift(
    recorded: dict[str, Any] | None, recorded_hash: str, bench: Bench
) -> list[str] | None:
    """How `bench` differs from the bench results were taken with (its recorded spec and
    hash), for a resume or a collect: None, not at all; else the fields changed in what
    is measured, which refuse going on, an empty list when only what is computed from
    the measurements (REBUILT_FIELDS) or how it is shown (PRESENTATION_FIELDS) changed."""
    if same_bench(recorded, recorded_hash, bench):
        return None
    if recorded is None:  # recorded before benches were kept: nothing to compare with
        return ["(not recorded)"]
    return spec_drift(recorded, bench.model_dump(mode="json"), REBUILT_FIELDS + STARTED_FIELDS)
