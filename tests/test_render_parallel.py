"""Figures drawn in forked processes: a Ctrl-C or TERM of the command ends its drawers
with it, so none goes on writing figures after the command said it was interrupted."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernbench import render

NAMES = ["first", "second", "third"]


@pytest.fixture
def usr1_interrupts() -> Iterator[None]:
    """SIGUSR1 raises KeyboardInterrupt here, as Ctrl-C does in the command."""
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGUSR1, interrupt)
    yield
    signal.signal(signal.SIGUSR1, before)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_interrupted_parallel_render_leaves_no_drawer_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usr1_interrupts: None
) -> None:
    command = os.getpid()

    def slow_draw(results: Any, name: str, out_dir: Path) -> None:
        (tmp_path / f"{name}.pid").write_text(str(os.getpid()))
        if name == NAMES[-1]:  # every drawer has started: the command is interrupted
            os.kill(command, signal.SIGUSR1)
        time.sleep(60)

    monkeypatch.setattr(render, "_draw", slow_draw)
    with pytest.raises(KeyboardInterrupt):
        render._render_in_parallel(None, tmp_path, NAMES)  # type: ignore[arg-type]
    pids = [int((tmp_path / f"{name}.pid").read_text()) for name in NAMES
            if (tmp_path / f"{name}.pid").exists()]
    left = [pid for pid in pids if alive(pid)]
    for pid in left:  # without the fix: ended here, not left to sleep after the test
        os.kill(pid, signal.SIGKILL)
    assert pids and not left
