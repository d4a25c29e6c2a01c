"""Why a worker ended with cells of its task unmeasured: how it exited, and the last
lines it wrote to its round's log."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from kernbench.execute.journal import FINISHED_LINE


def death(code: int, tail: str, when: str = "") -> str:
    """`worker exited with ...` and its last words; a worker that left none (a kernel's
    quiet `sys.exit(3)`) is said to have printed nothing, not given an empty reason."""
    reason = f"worker exited with {exit_text(code)}{when}"
    return f"{reason}: {tail}" if tail else f"{reason}, printing nothing"


def hosts_apart(code: int, tail: str) -> str:
    """Why the hosts' workers never met: the launcher's last line, or, when it left none
    (its output lost, a launcher killed mid-rendezvous), how it exited."""
    said = tail or f"the launcher exited with {exit_text(code)}, printing nothing"
    return f"the hosts did not meet: {said}"


def exit_text(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (killed: out of memory?)" if -code == signal.SIGKILL else ""
        return f"signal {name}{hint}"
    return f"exit code {code}"


def log_tail(path: Path, start: int = 0, lines: int = 3) -> str:
    """The last lines a worker wrote to the round's log from byte `start` on, less its
    lines for the cells it finished: what it said as it died."""
    try:
        with open(path, "rb") as log:
            log.seek(start)
            written = log.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    text = [line for line in written if not FINISHED_LINE.match(line)]
    return " | ".join(line.strip() for line in text[-lines:])[:400]


def log_reach() -> int:
    """How far this worker's log reaches now (its output flushed first): a cell that
    starts here owns what the log says from here on. 0 where the output is no file."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        return os.fstat(sys.stdout.fileno()).st_size
    except (OSError, ValueError):  # no descriptor (a captured stream), or closed
        return 0
