"""What must hold before a run measures: the device its bench requires, and over several
hosts, cells that are each one job of all their ranks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernbench.errors import UserError
from kernbench.execute.hosts import Hosts
from kernbench.plan import Cell
from kernbench.spec.loader import field_error
from kernbench.spec.models import Bench


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def check_world_sizes(hosts: Hosts, cells: Sequence[Cell]) -> None:
    """Over several hosts every cell must be one job of all their ranks."""
    others = sorted({int(c.params.get("world_size", 1)) for c in cells} - {hosts.world_size})
    if others:
        raise UserError(
            f"--nnodes {hosts.nnodes} x --nproc-per-node {hosts.nproc_per_node} start "
            f"{hosts.world_size} ranks, but the plan has cells of world_size "
            f"{', '.join(map(str, others))}; select the others with "
            f"--only world_size={hosts.world_size}"
        )


def check_requirements(
    bench: Bench, bench_path: Path, device: str, hosts: Hosts | None = None
) -> None:
    needed = bench.requires.device
    if needed != "any" and needed != device:
        raise field_error(bench_path, ("requires", "device"),
                          f"the bench needs {needed}, not {device}")
    if device == "cuda" and not _cuda_available():
        raise UserError("--device: cuda asked for, but torch with a CUDA device is not here")
    # Over several hosts each needs the GPUs of its own ranks only.
    gpus = bench.requires.min_gpus if hosts is None else hosts.nproc_per_node
    if device == "cuda" and gpus > 1:
        import torch

        count = torch.cuda.device_count()
        if count < gpus:
            message = f"needs {gpus} GPUs, this machine has {count}"
            if hosts is None:
                raise field_error(bench_path, ("requires", "min_gpus"), message)
            raise UserError(f"{bench_path}: --nproc-per-node: {message}")
