"""A sweep spread over a host's GPUs (`kernbench run --gpus N|all`): which GPUs, and
which cells each measures.

Each GPU gets its own worker per round (it sees that one device through
CUDA_VISIBLE_DEVICES), and the round's one-process cells are dealt out by their
estimated time: longest first, each to the GPU with the least work so far. Rounds stay
rounds: every GPU finishes round k before round k+1 starts, and a cell may meet another
GPU (of the same model) in its next round; each round result says which.

The GPUs are listed with `nvidia-smi`, not torch: the parent must hold no CUDA context
on a GPU its workers measure.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kernbench.errors import UserError, is_whole_number
from kernbench.plan import Cell
from kernbench.results.model import GpuId, RoundResult
from kernbench.worker_env import GPU_ENV

LISTED = "index,name,uuid,driver_version"  # what nvidia-smi is asked, per GPU


@dataclass(frozen=True)
class Lane:
    """One GPU's place in a round: its worker sees that GPU only."""

    slot: str  # gpu0, gpu1, ...: names the worker's task, log and current file
    gpu: GpuId

    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": self.gpu.index, GPU_ENV: self.gpu.model_dump_json()}


def lanes(gpus: Sequence[GpuId]) -> list[Lane]:
    return [Lane(f"gpu{position}", gpu) for position, gpu in enumerate(gpus)]


def worker_gpu() -> GpuId | None:
    """In a worker: the GPU its parent gave it (None without --gpus)."""
    raw = os.environ.get(GPU_ENV)
    return GpuId.model_validate_json(raw) if raw else None


def visible_gpus() -> list[GpuId]:
    """This host's GPUs, as CUDA_VISIBLE_DEVICES restricts them (indices or UUIDs)."""
    return visible_gpus_and_driver()[0]


def visible_gpus_and_driver() -> tuple[list[GpuId], str | None]:
    """`visible_gpus`, and the driver's version, from one nvidia-smi call."""
    try:
        listed = subprocess.run(
            ["nvidia-smi", f"--query-gpu={LISTED}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"--gpus: cannot list the GPUs (nvidia-smi: {exc})") from None
    gpus, driver = parse_listing(listed)
    return restrict(gpus, os.environ.get("CUDA_VISIBLE_DEVICES")), driver


def parse_listing(text: str) -> tuple[list[GpuId], str | None]:
    """nvidia-smi's rows of LISTED: the GPUs, and the driver (one per host: None with no
    GPU listed)."""
    gpus, drivers = [], []
    for line in text.strip().splitlines():
        index, rest = line.split(",", 1)
        name, uuid, driver = (part.strip() for part in rest.rsplit(",", 2))
        gpus.append(GpuId(index=index.strip(), name=name, uuid=uuid))
        drivers.append(driver)
    return gpus, drivers[0] if drivers else None


def restrict(gpus: list[GpuId], visible: str | None) -> list[GpuId]:
    """The GPUs CUDA_VISIBLE_DEVICES lets through, in its order (None: all of them)."""
    if visible is None:
        return gpus
    by_name = {g.index: g for g in gpus} | {g.uuid: g for g in gpus if g.uuid}
    kept = []
    for entry in (e.strip() for e in visible.split(",") if e.strip()):
        # A prefix of a UUID names it too, as CUDA reads the variable.
        found = by_name.get(entry) or next(
            (g for g in gpus if g.uuid and entry.startswith("GPU-") and g.uuid.startswith(entry)),
            None)
        if found is None:
            break  # CUDA ignores the entries after an invalid one
        kept.append(found)
    return kept


def choose_gpus(wanted: str, found: Sequence[GpuId], mixed_ok: bool) -> list[GpuId]:
    """`--gpus N|all` among the GPUs found; GPUs of several models only with --force."""
    if wanted == "all":
        count = len(found)
    elif is_whole_number(wanted) and int(wanted) >= 1:
        count = int(wanted)
    else:
        raise UserError(f"--gpus: {wanted!r} is not a number of GPUs (1 or more) or `all`")
    if not found:
        raise UserError("--gpus: this machine shows no GPU")
    if count > len(found):
        raise UserError(f"--gpus: {count} GPUs asked for, this machine shows {len(found)}")
    chosen = list(found[:count])
    models = sorted({g.name or "?" for g in chosen})
    if len(models) > 1 and not mixed_ok:
        raise UserError(f"--gpus: the GPUs are of different models ({', '.join(models)}): "
                        "their cells would not compare; --force runs on them anyway")
    return chosen


def deal(cells: Sequence[Cell], estimate: Callable[[Cell], float], hands: int) -> list[list[Cell]]:
    """`cells` dealt into `hands` lists of about equal estimated time, longest first to
    the least loaded; each list keeps the order the cells came in (the round's order)."""
    if hands < 1:
        raise ValueError(f"hands must be at least 1, not {hands}")
    loads = [0.0] * hands
    owner: dict[int, int] = {}
    for cell in sorted(cells, key=lambda c: (-estimate(c), c.index)):
        hand = min(range(hands), key=lambda h: (loads[h], h))
        owner[cell.index] = hand
        loads[hand] += estimate(cell)
    return [[c for c in cells if owner[c.index] == hand] for hand in range(hands)]


def estimator(
    measured: Mapping[int, Sequence[RoundResult]], default_s: float
) -> Callable[[Cell], float]:
    """A cell's time: its median wall time over the rounds already measured (build, check
    and tune included), else `default_s` (the plan's estimate, the same for every cell)."""
    def estimate(cell: Cell) -> float:
        walls = sorted(r.wall_s for r in measured.get(cell.index, ()) if r.wall_s > 0)
        return walls[len(walls) // 2] if walls else default_s

    return estimate
