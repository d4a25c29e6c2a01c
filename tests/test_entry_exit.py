"""The exit code `kernbench` ends with is the one its command said, whatever CPython does
with a signal at the end: a Ctrl-C handled as it passed through `exec`-compiled code
(dataclasses, typer) is still exit 130, not a death by SIGINT, and a TERM that arrives
as the interpreter tears down leaves the finished command's code and no traceback. A
Ctrl-C outside any command (as typer builds the command line) says so in its line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernbench.errors import EXIT_INTERRUPTED, EXIT_OK


def entry_with(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """`kernbench`'s entry point, its command line replaced by `command` (a body), run as
    `python -m` runs it (CPython re-raises a Ctrl-C it thinks unhandled on that path)."""
    script = textwrap.dedent("""\
        import os, signal, sys, atexit
        import kernbench.cli

        def command():
        {body}

        kernbench.cli.main = command
        from kernbench.__main__ import main
        main()
        """).format(body=textwrap.indent(textwrap.dedent(command), "    "))
    (folder / "entry_driver.py").write_text(script)
    path = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "entry_driver"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": path})


def test_a_ctrl_c_handled_inside_exec_compiled_code_exits_130(tmp_path: Path) -> None:
    ended = entry_with("""\
        try:
            exec("raise KeyboardInterrupt")  # as in a dataclass's generated __init__
        except KeyboardInterrupt:
            print("kernbench: interrupted", file=sys.stderr)
            sys.exit(130)
        """, tmp_path)
    assert (ended.returncode, ended.stderr) == (EXIT_INTERRUPTED, "kernbench: interrupted\n")


def test_a_term_during_the_teardown_keeps_the_finished_commands_code(tmp_path: Path) -> None:
    ended = entry_with("""\
        atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))
        print("done")
        """, tmp_path)
    assert (ended.returncode, ended.stdout, ended.stderr) == (EXIT_OK, "done\n", "")


def test_a_ctrl_c_as_typer_builds_the_command_line_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It exited 130 without a word."""
    import typer.main

    from kernbench import __main__ as entry

    def building(*_: object) -> None:
        raise KeyboardInterrupt

    def leave(code: int) -> None:  # instead of os._exit, which would end pytest
        raise SystemExit(code)

    monkeypatch.setattr(typer.main, "get_command", building)
    monkeypatch.setattr(entry.signal, "signal", lambda *args: None)  # pytest's stay
    monkeypatch.setattr(entry.os, "_exit", leave)
    monkeypatch.setattr(sys, "argv", ["kernbench", "list"])
    with pytest.raises(SystemExit) as ended:
        entry.main()
    assert ended.value.code == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "kernbench: interrupted\n"


def test_a_ctrl_c_as_the_command_name_is_parsed_is_the_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Click took it for an abort: an empty line, `Aborted!` and exit 1."""
    from typer.testing import CliRunner

    from kernbench import cli
    from kernbench.commands.help import ReadableHelp

    def parsing(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ReadableHelp, "make_context", parsing)
    ended = CliRunner().invoke(cli.app, ["list"])
    assert (ended.exit_code, ended.stderr) == (EXIT_INTERRUPTED, "kernbench: interrupted\n")
