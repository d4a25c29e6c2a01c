"""Help reads in words (no `<bool>`, `<list[str]>`), and shell completion is on."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from kernbench import cli

runner = CliRunner()
COMMANDS = sorted(cli.typer.main.get_command(cli.app).commands)


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)], ids=str)
def test_help_names_no_python_types(command: list[str]) -> None:
    result = runner.invoke(cli.app, [*command, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert not re.search(r"<(bool|str|int|float|path|list\[[^\]]*\])[^>]*>", result.output)


def test_run_help_in_words() -> None:
    out = runner.invoke(cli.app, ["run", "--help"], env={"COLUMNS": "200"}).output
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("│ --")}
    assert lines["--only"].split()[2] == "TEXT..."
    assert lines["--out"].split()[2] == "PATH"
    assert lines["--hardware"].split()[2] == "NAME"
    assert lines["--save-pins"].split()[2] == "Also"  # a flag: no type at all


def test_shell_completion_is_on() -> None:
    out = runner.invoke(cli.app, ["--help"], env={"COLUMNS": "120"}).output
    assert "--install-completion" in out and "--show-completion" in out
    env = {"_KERNBENCH_COMPLETE": "complete_bash", "COMP_WORDS": "kernbench run --sa",
           "COMP_CWORD": "2"}
    result = runner.invoke(cli.app, [], env=env, prog_name="kernbench")
    assert result.output.split() == ["--save-pins"]
