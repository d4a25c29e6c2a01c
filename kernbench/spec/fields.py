"""The checked field types the spec's models share, and `Strict`, the base of every model
of a file kernbench reads (bench files, run.json, ab-run.json, the journal, ...) but the
results files, which may hold inf or nan (a fit's bandwidth, a check's error)."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=80)]
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
EnvVarName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Scalar = int | float | str | bool
# Strict: `rounds: true` or `rounds: "2"` in a bench file is a mistake, not 1 or 2 (an int
# still passes where a float is wanted).
Count = Annotated[int, Field(strict=True)]
Real = Annotated[float, Field(strict=True)]
PositiveFloat = Annotated[float, Field(strict=True, gt=0)]
# A relative width or tolerance: 0.01 is 1%, so `rel_ci: 1` (meaning 1%) is refused, not
# a stopping rule every first sample meets.
Fraction = Annotated[float, Field(strict=True, gt=0, lt=1)]
Flag = Annotated[bool, Field(strict=True)]


def _finite_throughout(data: dict[str, Any]) -> dict[str, Any]:
    # `allow_inf_nan` checks float fields only, not the floats in an untyped mapping.
    stack: list[tuple[str, Any]] = [(str(key), value) for key, value in data.items()]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where}: Input should be a finite number")
        if isinstance(value, dict):
            stack += [(f"{where}.{key}", item) for key, item in value.items()]
        elif isinstance(value, list):
            stack += [(f"{where}.{i}", item) for i, item in enumerate(value)]
    return data


# A mapping kept as it is (a bench's dump in run.json), with no inf or nan at any depth.
FiniteMapping = Annotated[dict[str, Any], AfterValidator(_finite_throughout)]


class Strict(BaseModel):
    # No inf or nan anywhere: a budget, a timeout or a ceiling of inf fails every cell.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
