"""Reference times to draw beside a collective run's (`kernbench render --reference`):
another tool's numbers for the same collectives, such as nccl-tests' (ADR 0042).

    {"schema_version": 1, "source": "nccl-tests 2.19.6, -g 2 -G 10",
     "points": [{"op": "allreduce", "bytes": 1024, "inplace": true, "dtype": "fp32",
                 "world_size": 2, "time_s": 6.1e-06}, ...]}

`bytes` follows nccl-tests' size, as the collective kernel's `bytes` axis does.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from kernbench.results.jsonio import FileFormat
from kernbench.spec.fields import Strict

REFERENCE_VERSION = 1


class ReferencePoint(Strict):
    op: str
    bytes: int = Field(gt=0)
    inplace: bool
    dtype: str
    world_size: int = Field(ge=1)
    time_s: float = Field(gt=0)


class Reference(Strict):
    schema_version: int = REFERENCE_VERSION
    source: str
    points: list[ReferencePoint]


REFERENCE_FORMAT: FileFormat[Reference] = FileFormat(
    "reference file", REFERENCE_VERSION, Reference
)


def load_reference(path: Path) -> Reference:
    return REFERENCE_FORMAT.read(path)
