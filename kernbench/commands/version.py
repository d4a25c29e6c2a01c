"""`kernbench --version`: the version and commit a bug report needs, in the words of a
figure's footer (`kernbench 0.1.0 @ 3002826abc (dirty)`, or `..., no git commit`)."""

from __future__ import annotations

from typing import Annotated

import typer

from kernbench.results.provenance import code_label, git_commit, kernbench_version


def version_line() -> str:
    return code_label({"kernbench": kernbench_version(), "git": git_commit()})


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


VersionFlag = Annotated[
    bool,
    typer.Option("--version", is_eager=True, callback=_show_version,
                 help="Print kernbench's version and commit, and exit."),
]
