"""The `kernel:` field of a bench: a built-in name, or `module:factory` with the module
named as an import names it. A path or a file name there is a common slip; the message
says what the field takes and, where it can, what was meant."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

from kernbench.kernels import BUILTINS

KERNEL_PATTERN = r"^([a-z][a-z0-9_]*|[A-Za-z_][\w.]*:[A-Za-z_]\w*)$"


def kernel_ref_problem(text: str) -> str | None:
    """Why `text` cannot name a kernel, in one line; None when it can."""
    module, colon, _ = text.partition(":")
    named_by_file = bool(colon) and module.endswith(".py")
    if re.fullmatch(KERNEL_PATTERN, text) and not named_by_file:
        return None
    meant = _meant(text)
    if named_by_file and meant is not None:
        return f"name the module, not its file: drop the .py ({meant!r})"
    message = (
        f"expected a built-in kernel ({', '.join(sorted(BUILTINS))}) or module:factory, "
        "the module as an import names it (no .py, no path)"
    )
    return f"{message}; did you mean {meant!r}?" if meant is not None else message


def _meant(text: str) -> str | None:
    """`text` written as module:factory: `good.py:make`, `./good:make` and `good.make`
    are `good:make`, `sub/good:make` is `sub.good:make`; None when no guess reads."""
    module, colon, factory = text.partition(":")
    if not colon:
        module, dot, factory = text.rpartition(".")
        if not dot or factory == "py":
            return None
    parts = [part for part in re.split(r"[/\\]", module.removesuffix(".py")) if part != "."]
    if not parts or any(part in ("", "..") for part in parts):
        return None  # outside the bench's folder: no module name reaches it
    guess = f"{'.'.join(parts)}:{factory}"
    return guess if re.fullmatch(KERNEL_PATTERN, guess) else None


def _checked(text: str) -> str:
    problem = kernel_ref_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


KernelRef = Annotated[
    str,
    AfterValidator(_checked),
    WithJsonSchema({"pattern": KERNEL_PATTERN, "type": "string"}),
]
