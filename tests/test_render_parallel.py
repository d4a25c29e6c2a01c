"""Figures drawn in forked processes: a Ctrl-C or TERM of the command ends its drawers
with it, so none goes on writing figures after the command said it was interrupted."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import pytest

from kernbench import render

NAMES = ["first", "second", "third"]


def interrupt_once_joining(monkeypatch: pytest.MonkeyPatch, ready: Callable[[], bool]) -> None:
    """The command is interrupted (a Ctrl-C or TERM) as it first waits for its drawers,
    once `ready()` holds; not from a drawer's signal, which could land in the parent while
    it still forks the others (in CPython's at-fork hooks, where it is lost)."""
    wait = BaseProcess.join
    interrupted = []

    def join(self: BaseProcess, timeout: float | None = None) -> None:
        if not interrupted:
            interrupted.append(True)
            deadline = time.monotonic() + 30
            while not ready() and time.monotonic() < deadline:
                time.sleep(0.01)
            raise KeyboardInterrupt
        wait(self, timeout)

    monkeypatch.setattr(BaseProcess, "join", join)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_interrupted_parallel_render_leaves_no_drawer_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow_draw(results: Any, name: str, out_dir: Path) -> None:
        (tmp_path / f"{name}.pid").write_text(str(os.getpid()))
        time.sleep(60)

    monkeypatch.setattr(render, "_draw", slow_draw)
    interrupt_once_joining(  # every drawer has started
        monkeypatch, lambda: all((tmp_path / f"{n}.pid").exists() for n in NAMES))
    with pytest.raises(KeyboardInterrupt):
        render._render_in_parallel(None, tmp_path, NAMES)  # type: ignore[arg-type]
    pids = [int((tmp_path / f"{name}.pid").read_text()) for name in NAMES
            if (tmp_path / f"{name}.pid").exists()]
    left = [pid for pid in pids if alive(pid)]
    for pid in left:  # without the fix: ended here, not left to sleep after the test
        os.kill(pid, signal.SIGKILL)
    assert pids and not left


def test_an_interrupted_parallel_render_leaves_no_temporary_of_a_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A drawer killed as it wrote its PNG left `.NAME.png.XXXXXXXX` behind, and the next
    fast mode refused its own folder for it."""
    from kernbench.results import atomic

    def drawing(results: Any, name: str, out_dir: Path) -> None:
        with atomic.replaced(out_dir / f"{name}.png") as tmp:
            tmp.write_bytes(b"\x89PNG half")
            (tmp_path / f"{name}.writing").touch()
            time.sleep(60)

    out = tmp_path / "figures"
    out.mkdir()
    (out / ".other.png.keep1234").write_bytes(b"a temporary of a figure not drawn here")
    monkeypatch.setattr(render, "_draw", drawing)
    interrupt_once_joining(  # every drawer is writing
        monkeypatch, lambda: all((tmp_path / f"{n}.writing").exists() for n in NAMES))
    with pytest.raises(KeyboardInterrupt):
        render._render_in_parallel(None, out, NAMES)  # type: ignore[arg-type]
    assert sorted(p.name for p in out.iterdir()) == [".other.png.keep1234"]


FORKING: list[int] = []  # the signal the at-fork hook below sends the parent, when armed


def _signal_as_forked() -> None:
    if FORKING:
        signal.raise_signal(FORKING.pop())


os.register_at_fork(after_in_parent=_signal_as_forked)  # inert unless FORKING holds one


def test_a_ctrl_c_as_a_drawer_is_forked_interrupts_the_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taken inside CPython's at-fork hooks, a Ctrl-C was printed as "Exception ignored"
    and dropped: the render went on to the end as if none had come."""
    def short_draw(results: Any, name: str, out_dir: Path) -> None:
        time.sleep(0.5)

    monkeypatch.setattr(render, "_draw", short_draw)
    FORKING.append(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            render._render_in_parallel(None, tmp_path, NAMES)  # type: ignore[arg-type]
    finally:
        FORKING.clear()
