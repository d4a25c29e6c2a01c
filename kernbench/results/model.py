"""The versioned results file (`results.json`): models, atomic writing, loading.

Format history (bump SCHEMA_VERSION and add a step to RESULTS_FORMAT's `update_to`):
  1: first format.
  2: `fits`: the α-β fit of each collective series, computed when the results are built;
     `update_to[2]` fits version 1 files. A record only: figures refit (ADR 0047 addendum).
  3: the steady state of each round (`duty`, `settle`, `blocks`, `position` in its round's
     order) and of each cell (`round_spread`, `unsteady`); `order_seed`. Older files have
     none of them: `update_to[3]` marks their duty unknown (None) and leaves the rest empty.
  4: `topology`: the world size and the hosts the ranks ran on (None in older files);
     each round's `gpu` (index, name, UUID) in a run spread over a host's GPUs.
  5: `selection`: the `--only`, `--cells` and `--shard` that chose the run's cells (None
     in older files), so `merge` can tell a missing shard, or shards of other selections.
  6: each cell's `unresolved` (`analyze.stats.unresolved`: its median's interval is not
     within a factor of two of it, or reaches zero); `update_to[6]` computes it from each
     summary.

A results file may be packed (`.json.xz` or `.json.gz`); `load` reads each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernbench.analyze import stats
from kernbench.analyze.collective import AlphaBeta, fit_series, is_collective_cell
from kernbench.errors import invalid_file
from kernbench.results import kinds
from kernbench.results.jsonio import FileFormat, plain_or_packed, read_json, unchanged
from kernbench.results.kinds import RESULTS_NAME
from kernbench.spec.models import HardwareProfile
from kernbench.spec.timer_model import Duty, TimerSpec

SCHEMA_VERSION = 6


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Check(_Model):
    rel_err: float | None
    tolerance: float
    ok: bool


class GpuId(_Model):
    """The GPU a round ran on, in a run spread over a host's GPUs (`--gpus`)."""

    index: str  # as CUDA_VISIBLE_DEVICES named it to the worker
    name: str | None = None
    uuid: str | None = None


# Begins a round's reason where an A/B side could not time the cell for another side's
# failure (the side itself was fine): a report names the side that failed instead.
NOT_TIMED = "not timed: "


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
    # The state the samples were taken in (timing.steady): None where the timer applies
    # no duty cycle (the CPU timer) or the file predates it.
    duty: Duty | None = None
    settle: dict[str, Any] | None = None  # settled, seconds, calls, block_medians_s
    blocks: list[dict[str, Any]] = Field(default_factory=list)  # timing.steady.Block each
    position: int | None = None  # the cell's place in its round's order (0-based)
    gpu: GpuId | None = None  # with --gpus: which GPU measured this round


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
    # max/min - 1 of the round medians; unsteady when it exceeds the timer's steady_tol
    round_spread: float | None = None
    unsteady: bool = False
    # the median is below what its samples resolve (analyze.stats.unresolved)
    unresolved: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class Fit(_Model):
    """t(S) = α + S/β fitted to one collective series (kernbench.analyze.collective)."""

    alpha_s: float
    beta_bytes_per_s: float  # inf: the times do not grow with the size
    r2: float  # of log t; NaN when the times do not vary

    @classmethod
    def of(cls, fit: AlphaBeta) -> Fit:
        return cls(**asdict(fit))

    def alpha_beta(self) -> AlphaBeta:
        return AlphaBeta(self.alpha_s, self.beta_bytes_per_s, self.r2)


def fits_of(points: Iterable[tuple[Mapping[str, Any], float]]) -> dict[str, Fit]:
    """`fit_series` of (cell params, median time) points, as results models."""
    return {name: Fit.of(fit) for name, fit in fit_series(points).items()}


def collective_fits(cells: Sequence[CellResult]) -> dict[str, Fit]:
    """The α-β fit of each collective series, made now from the cells by today's method.

    The one place a figure or report takes its fit from: `Results.fits` is what the run's
    kernbench fitted and stays as written, so a file fitted before ADR 0047 drew lines off
    its own data (its addendum)."""
    return fits_of(
        (cell.params, cell.summary.median_s)
        for cell in cells
        if cell.status == "ok" and cell.summary is not None and is_collective_cell(cell.params)
    )


class Topology(_Model):
    """Where the ranks ran: the world size of the run's largest job, and its hosts."""

    world_size: int
    nnodes: int = 1
    nproc_per_node: int
    hosts: list[str | None]  # hostname by node rank; None: that host never joined


class Selection(_Model):
    """The cells a run chose from its bench's plan on its device."""

    only: list[str] = Field(default_factory=list)  # --only KEY=V1[,V2], each as given
    cells: list[int] | None = None  # --cells: plan indices (an A/B side's)
    shard: str | None = None  # --shard I/N: every N-th of the cells chosen so, from the I-th


class Results(_Model):
    schema_version: int = SCHEMA_VERSION
    bench: str
    description: str = ""
    spec_hash: str
    spec: dict[str, Any]
    created_utc: str
    finished_utc: str | None = None
    complete: bool = False
    device: Literal["cpu", "cuda"]
    rounds: int
    first_round: int = 1
    provenance: dict[str, Any]
    hardware: dict[str, Any] | None = None
    pins: dict[str, Any] = Field(default_factory=dict)  # every pin used, by key
    stale_pins: list[str] = Field(default_factory=list)
    order_seed: int | None = None  # each round's cell order is shuffled from it (None: plan order)
    cells: list[CellResult]
    # By series ("allreduce n=2 bf16 in-place"), as fitted when the file was built: a record.
    # Figures and reports refit the cells (`collective_fits`), so they follow the method.
    fits: dict[str, Fit] = Field(default_factory=dict)
    topology: Topology | None = None
    selection: Selection | None = None  # None: a file from before version 5

    def failed_cells(self) -> list[CellResult]:
        return [cell for cell in self.cells if cell.status != "ok"]

    def hardware_profile(self) -> HardwareProfile | None:
        """The hardware profile the run used, validated anew at each call: a reader keeps it."""
        return HardwareProfile.model_validate(self.hardware) if self.hardware else None

    def timer_setting(self, name: str) -> Any:
        """A setting of the bench's timer as the run recorded it; today's default where an
        older file predates the setting."""
        return self.spec.get("timer", {}).get(name, TimerSpec.model_fields[name].default)


def _update_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Fit the collective series of a version 1 file, read as version 1 wrote them."""
    try:
        points = [
            (cell["params"], cell["summary"]["median_s"])
            for cell in data["cells"]
            if cell["status"] == "ok" and cell.get("summary") and is_collective_cell(cell["params"])
        ]
        fits = fits_of(points)
    except (KeyError, TypeError, ValueError):
        fits = {}  # malformed cells: validation names the field
    return {**data, "fits": {name: fit.model_dump() for name, fit in fits.items()}}


def _update_to_6(data: dict[str, Any]) -> dict[str, Any]:
    """Each summarized cell's `unresolved`, as a version 6 run would have flagged it: older
    files hold cells whose interval reaches below zero (a graph sample is a difference)."""
    cells = data.get("cells")
    if not isinstance(cells, list):
        return data  # validation names the field
    updated = []
    for cell in cells:
        summary: Any = cell.get("summary") if isinstance(cell, dict) else None
        try:
            flag = stats.unresolved(float(summary["median_s"]), float(summary["ci_low_s"]),
                                    float(summary["ci_high_s"]))
        except (KeyError, TypeError, ValueError):
            updated.append(cell)  # no summary, or a malformed one validation names
            continue
        updated.append({**cell, "unresolved": flag})
    return {**data, "cells": updated}


RESULTS_FORMAT = FileFormat(
    "results file", SCHEMA_VERSION, Results,
    {2: _update_to_2, 3: unchanged, 4: unchanged, 5: unchanged, 6: _update_to_6},
)


def save(results: Results, path: Path) -> None:
    RESULTS_FORMAT.write(path, results)


def load(path: Path) -> Results:
    """A results file, plain or packed, or the one in a run folder, migrated to the
    current version. An A/B's file or folder, a run's run.json and a bench file are
    refused as what they are."""
    path = Path(path)
    if path.is_dir():
        found = results_in(path)
        if found is None:
            kinds.refuse_folder(path)  # else: a folder, not a results file, as read_json says
        path = found or path
    kinds.refuse_bench_file(path)
    data = read_json(path, RESULTS_FORMAT.what)
    kinds.refuse_data(path, data)
    results = RESULTS_FORMAT.parse(data, path)
    _check_read_parts(path, results)
    return results


class _SpecReadParts(BaseModel):
    """The parts of a results file's bench that figures and reports read; the rest is
    kept as recorded (a bench an older kernbench wrote need not fit today's model)."""

    model_config = ConfigDict(extra="allow")
    figures: list[str] | None = None
    metrics: dict[str, Any] | None = None
    rates: list[str] = Field(default_factory=list)
    timer: dict[str, Any] = Field(default_factory=dict)


def _check_read_parts(path: Path, results: Results) -> None:
    """`spec` and `hardware` are kept as dicts, as written; what the readers take from them
    is checked here, so a hand-edited file is one line, not a failure deep in a figure."""
    for within, model, part in (("spec", _SpecReadParts, results.spec),
                                ("hardware", HardwareProfile, results.hardware)):
        try:
            if part is not None:
                model.model_validate(part)
        except ValidationError as exc:
            raise invalid_file(path, exc, within=within) from None


def results_in(folder: Path) -> Path | None:
    """A run folder's results file, plain or packed; None if it has none."""
    return plain_or_packed(Path(folder) / RESULTS_NAME)


def results_json_schema() -> dict[str, Any]:
    return Results.model_json_schema()
