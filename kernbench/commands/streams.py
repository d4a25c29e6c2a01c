"""What the CLI does when the reader of its output goes away (`kernbench list | head -1`)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from kernbench.errors import EXIT_BROKEN_PIPE


def pipe_closed() -> NoReturn:
    """Exit quietly with EXIT_BROKEN_PIPE, Python's documented way: what is left to flush
    goes to /dev/null, not into a second BrokenPipeError as the interpreter exits."""
    stdout_to_nowhere()
    raise typer.Exit(EXIT_BROKEN_PIPE)


def stdout_to_nowhere() -> None:
    """Send what is left for stdout, and all that follows, to /dev/null: its reader is gone."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
