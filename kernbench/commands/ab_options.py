"""The options of `kernbench ab` that say what each side does with the switch, each
declared once (typer `Annotated` aliases); the bench's `ab:` block holds the same (`AbSpec`).
And `--fail-on`'s choices as the help of `ab` and `compare` words them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kernbench.spec.ab_model import FAIL_ONS

FAIL_ON_CHOICES = f"{', '.join(FAIL_ONS[:-1])} or {FAIL_ONS[-1]}"  # slower, faster or any

Switch = Annotated[
    str | None, typer.Option("--switch", help="Environment variable switched A -> B, or "
                             "`variant`: A and B are two of the bench's variants.")
]
SideA = Annotated[str | None, typer.Option("--a", help="Value (or variant) on side A "
                                           "(default 0).")]
SideB = Annotated[str | None, typer.Option("--b", help="Value (or variant) on side B "
                                           "(default 1).")]
# Unset is not the empty string: a library may take the variable's mere presence as a switch.
UnsetA = Annotated[bool | None, typer.Option(
    "--a-unset", help="Side A leaves the variable unset (--a \"\" sets it to the empty string).")]
UnsetB = Annotated[bool | None, typer.Option("--b-unset", help="Side B leaves it unset.")]
ResumeForce = Annotated[bool, typer.Option(
    "--force", help="With --resume: resume on another device model than the kept sides'.")]
