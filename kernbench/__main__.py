"""`python -m kernbench` and the `kernbench` command.

The signals are set before the command line is imported (about 0.4 s of typer, rich and
pydantic): a Ctrl-C, a TERM or a HUP in that window ends the command with 130, as later,
not with a traceback or the signal's own status.
"""

from __future__ import annotations

import signal
import sys

from kernbench.errors import EXIT_INTERRUPTED


def interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """A TERM (`timeout`, a job scheduler's stop) and a HUP (the terminal or the ssh
    session that started it closed) end a run or an A/B as Ctrl-C does: where it is,
    keeping and reporting what it measured. A HUP that is ignored (`nohup`) stays ignored."""
    signal.signal(signal.SIGTERM, interrupt)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, interrupt)


def main() -> None:
    stop_on_signals()
    try:
        from kernbench.cli import main as command_line
    except KeyboardInterrupt:
        print("kernbench: interrupted", file=sys.stderr)  # as later, once the CLI is loaded
        sys.exit(EXIT_INTERRUPTED)
    command_line()


if __name__ == "__main__":
    main()
