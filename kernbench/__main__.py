"""`python -m kernbench` and the `kernbench` command.

The signals are set before the command line is imported (about 0.4 s of typer, rich and
pydantic): a Ctrl-C or a TERM in that window ends the command with 130, as later, not
with a traceback or the signal's own status.
"""

from __future__ import annotations

import signal
import sys

from kernbench.errors import EXIT_INTERRUPTED


def interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    # A TERM (`timeout`, a job scheduler's stop) ends a run or an A/B as Ctrl-C does: where
    # it is, keeping and reporting what it measured.
    signal.signal(signal.SIGTERM, interrupt)
    try:
        from kernbench.cli import main as command_line
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    command_line()


if __name__ == "__main__":
    main()
