"""Help that names each value's kind in words (TEXT, PATH, INTEGER; `...` after a repeatable
one, nothing after a flag), where typer would print the Python type: `<bool>`,
`<list[str]>`. An explicit metavar (`--hardware NAME`) is kept. Help read by a pipe that
closes early (`kernbench --help | head -1`) exits as any command's output does then."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from kernbench.errors import EXIT_BROKEN_PIPE

# typer's type labels, without their <>, in click's words.
TYPE_WORDS = {
    "str": "TEXT", "int": "INTEGER", "int range": "INTEGER", "float": "FLOAT",
    "float range": "FLOAT", "path": "PATH", "Path": "PATH", "file": "FILE", "directory": "DIR",
}


def type_word(label: str) -> str:
    repeatable = label.startswith("list[") and label.endswith("]")
    inner = label[len("list["):-1] if repeatable else label
    return TYPE_WORDS.get(inner, inner.upper()) + ("..." if repeatable else "")


def print_help_quietly(format_help: Callable[[Any, Any], None], ctx: Any, formatter: Any) -> None:
    """rich ends help that meets a closed pipe with SystemExit(1), a failure's status (and
    already points stdout at /dev/null): here it is the broken pipe's, as elsewhere."""
    try:
        format_help(ctx, formatter)
    except SystemExit as exc:
        if exc.code != 1:
            raise
        raise typer.Exit(EXIT_BROKEN_PIPE) from None


def readable_types(command: Any, ctx: Any) -> None:
    """Give each parameter of a typer command (and its --help) a readable type column."""
    help_option = command.get_help_option(ctx)
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if param.metavar is not None or not hasattr(param, "display_type"):
            continue  # named by hand, or a typer that prints no Python types
        flag = getattr(param, "is_flag", False)
        word = None if flag else type_word(param.display_type(ctx).strip("<>"))
        param.display_type_rich = lambda ctx, word=word: word


class ReadableHelp(typer.core.TyperGroup):
    """Help names each value's kind in words, not typer's `<bool>` (commands/help.py)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            readable_types(command, ctx)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        readable_types(self, ctx)
        print_help_quietly(super().format_help, ctx, formatter)


class QuietHelpCommand(typer.core.TyperCommand):
    """A command whose help, read by a pipe that closes early, exits as the broken pipe's."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help_quietly(super().format_help, ctx, formatter)


class ReadableTyper(typer.Typer):
    """The app: its commands are QuietHelpCommands unless they name their own class."""

    def command(self, *args: Any, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(*args, cls=cls or QuietHelpCommand, **kwargs)
