"""An op bench input's `init` with its arguments evaluated: each is a number or an
expression over the cell's parameters (`randint(0, experts)`, `randint(0, vocab - 1)`),
read by the evaluator shapes and metrics use (`expr.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from kernbench.kernels.tensors import Init, make_init, read_init
from kernbench.spec import expr


def check_init(text: str) -> None:
    """At load: the init's form, each argument's syntax, and, where no argument names a
    parameter, its values (`randint(5, 1)`); a ValueError otherwise. An argument naming a
    parameter is checked on each cell (`cell_init`, from `analyze/checks.py`)."""
    kind, arguments = _parsed(text)
    if not any(argument.names for argument in arguments):
        make_init(kind, [argument.evaluate({}) for argument in arguments])


def cell_init(text: str, namespace: Mapping[str, object]) -> Init:
    """The init `text` on one cell, whose parameters (and `itemsize`) are `namespace`."""
    kind, arguments = _parsed(text)
    return make_init(kind, [argument.evaluate(namespace) for argument in arguments])


@lru_cache(maxsize=1024)  # read once, though evaluated on each cell of the bench
def _parsed(text: str) -> tuple[str, tuple[expr.Expression, ...]]:
    call = read_init(text)
    return call.kind, tuple(expr.parse(arg) for arg in call.args)
