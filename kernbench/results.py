"""The versioned results file (`results.json`): models, atomic writing, loading.

Format history (bump SCHEMA_VERSION and add a migration in `_MIGRATIONS` on change):
  1: first format.

A results file may be gzipped (`.json.gz`); `load` reads both.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernbench.errors import UserError, invalid_file

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Check(_Model):
    rel_err: float | None
    tolerance: float
    ok: bool


class RoundResult(_Model):
    """One cell measured in one round (one worker process)."""

    round: int
    status: Literal["ok", "failed"]
    reason: str | None = None
    timer: str | None = None
    samples_s: list[float] = Field(default_factory=list)
    warmup_calls: int = 0
    stop_reason: str | None = None
    stages_s: dict[str, list[float]] = Field(default_factory=dict)
    sm_clock_mhz: list[float] = Field(default_factory=list)
    throttled: list[bool] = Field(default_factory=list)
    median_s: float | None = None
    check: Check | None = None
    pin: str | None = None  # key of the pin this round used
    pin_action: Literal["recorded", "replayed", "stale-retuned"] | None = None
    wall_s: float = 0.0  # the whole cell: build, check, tune, warm-up and sampling
    side: str = ""  # KERNBENCH_SIDE of the worker
    extra: dict[str, Any] = Field(default_factory=dict)


class Summary(_Model):
    """Statistics over every sample of every ok round."""

    n: int
    median_s: float
    mean_s: float
    min_s: float
    max_s: float
    q1_s: float
    q3_s: float
    iqr_s: float
    rel_iqr: float
    ci_low_s: float
    ci_high_s: float
    ci_coverage: float
    round_medians_s: list[float]


class CellResult(_Model):
    id: str
    index: int
    variant: str
    axes: dict[str, Any]
    params: dict[str, Any]
    status: Literal["ok", "failed", "invalid", "pending"]
    reason: str | None = None
    rounds: list[RoundResult] = Field(default_factory=list)
    summary: Summary | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    stages_s: dict[str, float] = Field(default_factory=dict)  # median per stage
    tile: list[int] | None = None
    under_tile: bool = False
    throttled_fraction: float | None = None
    info: dict[str, Any] = Field(default_factory=dict)


class Results(_Model):
    schema_version: int = SCHEMA_VERSION
    bench: str
    description: str = ""
    spec_hash: str
    spec: dict[str, Any]
    created_utc: str
    finished_utc: str | None = None
    complete: bool = False
    device: str
    rounds: int
    first_round: int = 1
    provenance: dict[str, Any]
    hardware: dict[str, Any] | None = None
    pins: dict[str, Any] = Field(default_factory=dict)  # every pin used, by key
    stale_pins: list[str] = Field(default_factory=list)
    cells: list[CellResult]

    def failed_cells(self) -> list[CellResult]:
        return [cell for cell in self.cells if cell.status != "ok"]


def write_json(path: Path, data: Any) -> None:
    """Write atomically (temp file + rename), sorted keys, so diffs stay clean."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=1, sort_keys=True, allow_nan=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(results: Results, path: Path) -> None:
    write_json(path, results.model_dump(mode="json"))


def read_text(path: Path) -> str:
    """A results file, plain or gzipped (`.json.gz`: committed sweeps with raw samples)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt") as handle:
            return handle.read()
    return path.read_text()


def save_gzip(results: Results, path: Path) -> None:
    """Deterministic gzip (no name, mtime 0): the same results give the same bytes."""
    text = json.dumps(results.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb",
                                                 mtime=0) as handle:
        handle.write(text.encode())


# Older format -> next format, keyed by the older version.
_MIGRATIONS: dict[int, Any] = {}


def load(path: Path) -> Results:
    path = Path(path)
    try:
        data = json.loads(read_text(path))
    except FileNotFoundError:
        raise UserError(f"{path}: results file not found") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int):
        raise UserError(f"{path}: schema_version: missing; not a kernbench results file")
    if version > SCHEMA_VERSION:
        raise UserError(
            f"{path}: schema_version: {version} is newer than this kernbench understands "
            f"({SCHEMA_VERSION}); upgrade kernbench"
        )
    while version < SCHEMA_VERSION:
        if version not in _MIGRATIONS:
            raise UserError(f"{path}: schema_version: {version} cannot be migrated")
        data = _MIGRATIONS[version](data)
        version = data["schema_version"]
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        raise invalid_file(path, exc) from None


def results_json_schema() -> dict[str, Any]:
    return Results.model_json_schema()
