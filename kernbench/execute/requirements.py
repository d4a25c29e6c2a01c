"""What a bench's `requires:` asks of this machine: checked by `kernbench run` and by
`kernbench ab` (new and resumed) before anything is measured or written."""

from __future__ import annotations

from pathlib import Path

from kernbench.errors import UserError
from kernbench.execute.hosts import Hosts
from kernbench.spec.extras import first_missing_import
from kernbench.spec.models import Bench
from kernbench.spec.yaml_document import field_error


def check_requirements(
    bench: Bench, bench_path: Path, device: str, hosts: Hosts | None = None
) -> None:
    needed = bench.requires.device
    if needed != "any" and needed != device:
        raise field_error(bench_path, ("requires", "device"),
                          f"the bench needs {needed}, not {device}")
    missing = first_missing_import(bench)
    if missing is not None:
        raise field_error(bench_path, *missing)
    require_cuda(device)
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


def require_cuda(device: str) -> None:
    """`--device cuda` on a machine without one: refused at the option, before any work."""
    if device == "cuda" and not _cuda_available():
        raise UserError("--device: cuda asked for, but torch with a CUDA device is not here")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
