"""Help reads in words (no `<bool>`, `<list[str]>`), and shell completion is on."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.commands import version

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


@pytest.mark.parametrize(("git", "line"), [
    ({"commit": "3002826758" + "0" * 30, "dirty": True}, "kernbench 0.1.0 @ 3002826758 (dirty)\n"),
    ({}, "kernbench 0.1.0, no git commit\n"),  # an installed wheel
])
def test_version_names_the_version_and_the_commit(
    monkeypatch: pytest.MonkeyPatch, git: dict[str, object], line: str
) -> None:
    monkeypatch.setattr(version, "kernbench_version", lambda: "0.1.0")
    monkeypatch.setattr(version, "git_commit", lambda: git)
    shown = CliRunner().invoke(cli.app, ["--version"])
    assert (shown.exit_code, shown.stdout) == (0, line)
