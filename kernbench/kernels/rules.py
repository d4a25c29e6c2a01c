"""The rules a kernel factory's module may define beside its factory, which `validate`
asks before anything is measured (docs/kernels.md):

- `options_problem(options) -> str | None`, given each variant's options alone;
- `cell_problem(params) -> str | None`, given each cell's parameters as the factory gets
  them.

A rule is the bench author's code: one that raises is a bug in the rule, reported at the
field it was asked about with where it raised, as a problem is, not as a traceback or a
file that "cannot load".
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kernbench.kernels.failure import one_line, raised_at

OPTIONS_RULE = "options_problem"
CELL_RULE = "cell_problem"

Rule = Callable[[dict[str, Any]], object]


def module_rule(factory: Callable[..., object], name: str) -> Rule | None:
    """The rule `name` of the factory's module, or None where it defines none."""
    rule = getattr(inspect.getmodule(factory), name, None)
    return rule if callable(rule) else None


def ask(rule: Rule, argument: dict[str, Any]) -> str | None:
    """What `rule` says of `argument`: a problem, or None. A rule that raises says, in one
    line, that it raised and where: the caller reports it as it reports a problem."""
    try:
        answer = rule(argument)
    except Exception as exc:  # noqa: BLE001 - the author's rule may raise anything
        name = getattr(rule, "__name__", "the rule")
        return f"{name} raised {one_line(exc, raised_at(exc))}"
    return str(answer) if answer else None
