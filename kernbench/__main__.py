"""`python -m kernbench` and the `kernbench` command.

The signals are set before the command line is imported (about 0.4 s of typer, rich and
pydantic): a Ctrl-C, a TERM or a HUP in that window ends the command with 130, as later,
not with a traceback or the signal's own status.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
from typing import NoReturn

from kernbench.errors import EXIT_INTERRUPTED

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def hang_up(signum: int, frame: object) -> None:
    """The terminal closed: every write to it now fails (EIO), the progress bar's first of
    all, which would end the run with a traceback before results.json. Its output goes to
    /dev/null from here, and the run stops as on TERM."""
    nowhere = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        if on_a_terminal(fd):
            os.dup2(nowhere, fd)
    os.close(nowhere)
    raise KeyboardInterrupt


def on_a_terminal(fd: int) -> bool:
    """Whether `fd` writes to a terminal. Not `isatty`: a hung-up terminal fails its
    ioctl, so it reads as no terminal; a log file or a pipe keeps its output."""
    try:
        return stat.S_ISCHR(os.fstat(fd).st_mode)
    except OSError:
        return False


def stop_on_signals() -> None:
    """A TERM (`timeout`, a job scheduler's stop) and a HUP (the terminal or the ssh
    session that started it closed) end a run or an A/B as Ctrl-C does: where it is,
    keeping and reporting what it measured. A HUP that is ignored (`nohup`) stays ignored."""
    signal.signal(signal.SIGTERM, interrupt)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, hang_up)


def main() -> None:
    stop_on_signals()
    code: int | str | None = 0
    try:
        from kernbench.cli import main as command_line
        command_line()
    except KeyboardInterrupt:  # outside a command, which says it so too
        print("kernbench: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except SystemExit as ended:
        code = ended.code
    end(code)


def end(code: int | str | None) -> NoReturn:
    """Exit with the command's `code`, whatever signal comes now. CPython's teardown puts
    the default handlers back, so a TERM or a Ctrl-C arriving then would end the process
    by that signal: from here they are ignored. And CPython takes a Ctrl-C that went
    through code `exec` compiled (dataclasses and typer make their methods so) for one
    nothing handled, and ends the process by SIGINT at exit though the command handled it
    and said 130: an interrupted command leaves without the teardown."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if code != EXIT_INTERRUPTED:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or hung-up stream: nothing more to say
            pass
    os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
