"""The parts of a bench file that only `op:` benches have: `inputs:`, `args:`, `check:`.

An op bench names a callable (`op: torch.topk`) instead of a kernel factory; its tensors
are described here and made fresh for each cell (`kernbench/kernels/tensors.py`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from kernbench.dtypes import DTYPES
from kernbench.spec.fields import Strict
from kernbench.spec.op_inits import check_init

DottedPath = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")]
# A dimension, or a keyword's value: a number, or an expression over the cell's
# parameters (`rows`, `tokens * 2`); a keyword may also be a boolean or a list.
Dimension = Annotated[int, Field(strict=True, ge=0)] | str
ArgValue = int | float | bool | str | list[int | float | str]
INPUT_DTYPES = (*DTYPES, "bool")


class InputSpec(Strict):
    """One tensor passed to the op, by keyword."""

    shape: list[Dimension] = Field(
        description="Each dimension: a number, an axis name or an expression over them."
    )
    init: str = Field(
        "randn",
        description="randn, rand, zeros, ones, normal(mean, std), randint(low, high) or "
        "bernoulli(p) (a bool mask); each argument a number or an expression over the "
        "axes (randint(0, experts)).",
    )
    dtype: Literal[INPUT_DTYPES] | None = Field(  # type: ignore[valid-type]
        None,
        description="Default: the cell's dtype (randint: int64, bernoulli: bool).",
    )

    @field_validator("init")
    @classmethod
    def _known_init(cls, value: str) -> str:
        check_init(value)
        return value


class OpCheck(Strict):
    """The op's result against a reference callable's, once per cell before timing."""

    ref: DottedPath = Field(description="The reference callable, called with the same keywords.")
    exact: Annotated[bool, Field(strict=True)] = Field(
        False, description="Equal outputs required (the reference gets the same inputs)."
    )
    tolerance: Annotated[float, Field(strict=True, ge=0)] | None = Field(
        None,
        description="Largest relative error against the reference on float64 inputs; "
        "default: the dtype's.",
    )
    outputs: list[Annotated[int, Field(strict=True, ge=0)] | str] = Field(
        default_factory=list,
        description="The outputs compared, by index or name (topk: [values]); default: all.",
    )

    @model_validator(mode="after")
    def _exact_or_tolerance(self) -> OpCheck:
        if self.exact and self.tolerance is not None:
            raise ValueError("give `exact: true` or a `tolerance`, not both")
        return self
