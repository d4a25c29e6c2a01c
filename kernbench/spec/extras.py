"""The one rule of which modules a bench's cells import, told from its fields alone, and
the one wording of a refusal when one is not installed here: `list` (which imports no
bench code, ADR 0004's addendum), `validate`, `plan`, `run` and `ab` all ask it, and
`list`, `validate` and `plan` say it as `not_usable_here`. A
`requires.device: cuda` bench needs torch too (kernbench reaches CUDA through it), so
`list` marks it; `run` checks the device first (`execute/requirements.py`), so a cuda
bench asked for on a CPU is refused for its device, torch or not."""

from __future__ import annotations

import importlib.util

from kernbench.kernels import NEEDS_TORCH
from kernbench.kernels.callables import INSTALL_HINT
from kernbench.spec.models import Bench


def needed_imports(bench: Bench) -> list[tuple[tuple[str, ...], str]]:
    """Each top-level module a cell of `bench` imports when it runs, with the field that
    says so: its `requires.imports`, a built-in kernel in NEEDS_TORCH, an op (its cells
    are torch tensors), a CUDA device. A bench's own kernel module that imports torch
    cannot be told so."""
    needed: list[tuple[tuple[str, ...], str]] = [
        (("requires", "imports"), name) for name in bench.requires.imports
    ]
    if bench.kernel in NEEDS_TORCH:
        needed.append((("kernel",), "torch"))
    if bench.op is not None:
        needed.append((("op",), "torch"))
    if bench.requires.device == "cuda":  # reached through torch; `list` marks it so
        needed.append((("requires", "device"), "torch"))
    return needed


def first_missing_import(bench: Bench) -> tuple[tuple[str, ...], str] | None:
    """The field and one-line message of the first module `bench` needs that is not
    installed here (found without importing it), or None."""
    for field, name in needed_imports(bench):
        if importlib.util.find_spec(name) is None:
            hint = INSTALL_HINT.get(name)
            return field, f"needs {name}, not installed here" + (f" ({hint})" if hint else "")
    return None


def not_usable_here(why: str) -> str:
    """How `list`, `validate` and `plan` say that a bench cannot run here, and `why`
    (`first_missing_import`'s message)."""
    return f"not usable here: {why}"
