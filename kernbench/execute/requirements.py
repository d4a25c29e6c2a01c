"""What a bench's `requires:` asks of this machine: checked by `kernbench run` and by
`kernbench ab` (new and resumed) before anything is measured or written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kernbench.errors import UserError
from kernbench.execute.hosts import Hosts
from kernbench.kernels.callables import INSTALL_HINT
from kernbench.spec.loader import field_error
from kernbench.spec.models import Bench


def check_requirements(
    bench: Bench, bench_path: Path, device: str, hosts: Hosts | None = None
) -> None:
    needed = bench.requires.device
    if needed != "any" and needed != device:
        raise field_error(bench_path, ("requires", "device"),
                          f"the bench needs {needed}, not {device}")
    missing = missing_import(bench)
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


def needed_imports(bench: Bench) -> list[tuple[tuple[str, ...], str]]:
    """Each top-level module a cell of `bench` imports when it runs, with the field that
    says so: the bench's `requires.imports`, and what kernbench's own parts import (a
    collective's ranks are torch.distributed's; an op bench's inputs are torch tensors)."""
    needed: list[tuple[tuple[str, ...], str]] = [
        (("requires", "imports"), name) for name in bench.requires.imports
    ]
    if bench.kernel == "collective":
        needed.append((("kernel",), "torch"))
    if bench.op is not None and bench.inputs:
        needed.append((("op",), "torch"))
    return needed


def missing_import(bench: Bench) -> tuple[tuple[str, ...], str] | None:
    """The field and one-line message of the first module `bench` needs that is not
    installed here (found without importing it), or None."""
    for field, name in needed_imports(bench):
        if importlib.util.find_spec(name) is None:
            hint = INSTALL_HINT.get(name)
            return field, f"needs {name}, not installed here" + (f" ({hint})" if hint else "")
    return None
