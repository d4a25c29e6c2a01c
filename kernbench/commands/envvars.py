"""Options that an environment variable may set: a value that is refused names where it
came from, the variable or the option.

typer reads the variable (`envvar=`), so the command later sees only a value: without
this, `KERNBENCH_DEVICE=tpu` and `--device tpu` both said "unknown device 'tpu'", naming
neither.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from kernbench.errors import UserError
from kernbench.spec import hardware

Check = Callable[[str], object]  # raises UserError on a value it refuses


def checked_option(check: Check) -> Callable[[typer.Context, typer.CallbackParam, str], str]:
    """The callback of an option with an `envvar`: its value is checked by `check` at
    once, and a refusal says which variable, or which option, gave it."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: str) -> str:
        if value is None:
            return value
        source = ctx.get_parameter_source(param.name or "")
        # By name: typer vendors its own click, whose ParameterSource is not click's.
        given_by = param.envvar if getattr(source, "name", None) == "ENVIRONMENT" else None
        try:
            check(value)
        except UserError as exc:
            raise UserError(f"{given_by or param.opts[0]}: {exc.message}", exc.code) from None
        return value

    return callback


def known_device(choice: str) -> None:
    """`resolve_device`'s rule of device names, without detecting `auto`'s device."""
    if choice != "auto":
        hardware.resolve_device(choice)
