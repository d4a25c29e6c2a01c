"""Options that an environment variable may set: a value it gave that is refused names it.

typer reads the variable (`envvar=`), so the command later sees only a value: without
this, `KERNBENCH_DEVICE=tpu` said "unknown device 'tpu'", naming no variable.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from kernbench.errors import UserError
from kernbench.spec import hardware

Check = Callable[[str], object]  # raises UserError on a value it refuses


def from_env(check: Check) -> Callable[[typer.Context, typer.CallbackParam, str], str]:
    """The callback of an option with an `envvar`: a value taken from the variable is
    checked by `check` at once, and a refusal says which variable gave it."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: str) -> str:
        source = ctx.get_parameter_source(param.name or "")
        # By name: typer vendors its own click, whose ParameterSource is not click's.
        if value is None or getattr(source, "name", None) != "ENVIRONMENT":
            return value
        try:
            check(value)
        except UserError as exc:
            raise UserError(f"{param.envvar}: {exc.message}", exc.code) from None
        return value

    return callback


def known_device(choice: str) -> None:
    """`resolve_device`'s rule of device names, without detecting `auto`'s device."""
    if choice != "auto":
        hardware.resolve_device(choice)
