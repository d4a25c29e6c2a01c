"""Children that do not outlive their parent: a kill -9 of a runner, an agent or an A/B
must not leave a worker, a rank or a side measuring beside the `--resume` that follows
(it would write into the folder the resume clears, or time cells against it)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Any

from kernbench.errors import is_whole_number
from kernbench.worker_env import PARENT_PID_ENV

_PR_SET_PDEATHSIG = 1


def die_with_runner() -> None:
    """Be killed when the runner that started this process dies: the one `PARENT_PID_ENV`
    names (`parent_env` set it), else this process's parent."""
    named = os.environ.get(PARENT_PID_ENV, "")
    die_with_parent(int(named) if is_whole_number(named) else os.getppid())


def parent_env() -> dict[str, str]:
    """The environment that tells a child started now who its runner is: this process."""
    return {PARENT_PID_ENV: str(os.getpid())}


def die_with_parent(parent_pid: int) -> None:
    """Be killed when the parent `parent_pid` dies (Linux; elsewhere nothing). Also fit to
    run between fork and exec (`preexec_fn`): the signal is kept across exec."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def kill_group(process: subprocess.Popen[Any]) -> None:
    """Kill a worker's (or a side's) process group, itself included if it still runs.
    Linux does not reuse a pid while it names a live group, so this is safe after the
    process ended."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
