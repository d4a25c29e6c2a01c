"""Starting an interleaved A/B's sides (`ab/interleaved.py`): a side that cannot start
takes none of the others with it running, and a side whose answer is not JSON is lost
with that reason, not a traceback. The sides here are small `python -c` scripts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernbench.ab import interleaved
from kernbench.ab.interleaved import LiveSide, spawn_side
from kernbench.ab.outcomes import LOG_NAME
from kernbench.ab.schedule import SideRun

pytestmark = pytest.mark.slow

READY = '{"ok": true, "ready": true, "cells": 1}'
# A side that says it is ready, then waits for its pipe to close (`close()` sends "exit").
WAITS = f"import sys; print({READY!r}, flush=True); sys.stdin.read()"


def side_run(side: str, position: int) -> SideRun:
    return SideRun(name=f"r1_{side}", round=1, side=side, value=None, position=position,
                   slot=1, pins_mode="replay")


def spawn(tmp_path: Path, script: str, side: str = "A") -> LiveSide:
    folder = tmp_path / f"r1_{side}"
    folder.mkdir(parents=True, exist_ok=True)
    # The side's run folder is only where its log goes here.
    return spawn_side([sys.executable, "-c", script], side_run(side, 1),
                      SimpleNamespace(path=folder),  # type: ignore[arg-type]
                      {"PATH": "/usr/bin:/bin"})


def test_a_side_that_answers_not_json_is_lost_with_the_reason(tmp_path: Path) -> None:
    side = spawn(tmp_path, "import sys; print('warming up', flush=True); sys.stdin.read()")
    assert side.gone == "answered 'warming up', not a JSON object (killed)"
    assert side.process.poll() is not None
    side.close()


def test_a_reply_that_is_json_but_no_object_loses_the_side(tmp_path: Path) -> None:
    script = (f"import sys; print({READY!r}, flush=True); sys.stdin.readline(); "
              "print('[1, 2]', flush=True); sys.stdin.read()")
    side = spawn(tmp_path, script)
    assert side.gone is None
    assert side.ask({"op": "turn", "cell": 0, "calls": 1}, 30.0) is None
    assert side.gone == "answered '[1, 2]', not a JSON object (killed)"
    assert side.close() != 0


def is_open_here(path: Path) -> bool:
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if Path(os.readlink(fd)) == path:
                return True
        except OSError:  # the fd listing the folder itself, closed since
            pass
    return False


def interrupted(side: LiveSide, timeout_s: float) -> None:
    raise KeyboardInterrupt  # Ctrl-C before the side's ready line


@pytest.mark.parametrize("how", ["no such program", "interrupted while starting"])
def test_a_side_that_cannot_start_leaves_no_process_and_no_open_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    command = [str(tmp_path / "no-such-python")]
    if how == "interrupted while starting":
        command = [sys.executable, "-c", "import time; time.sleep(60)"]
        monkeypatch.setattr(LiveSide, "answer", interrupted)
    spawned: list[int] = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            spawned.append(self.pid)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    # The error keeps spawn_side's frame, and with it the log had it not been closed.
    with pytest.raises(KeyboardInterrupt if how.startswith("interrupted") else OSError) as _:
        spawn_side(command, side_run("A", 1),
                   SimpleNamespace(path=tmp_path),  # type: ignore[arg-type]
                   {"PATH": "/usr/bin:/bin"})
    assert len(spawned) == (how == "interrupted while starting")
    for pid in spawned:  # ended and reaped: a zombie would still answer signal 0
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    log = tmp_path / LOG_NAME
    assert log.is_file() and not is_open_here(log)


def test_when_the_second_side_fails_to_start_the_first_is_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[LiveSide] = []

    def start_side(folder: Path, manifest: Any, run: SideRun, *args: Any, **kwargs: Any,
                   ) -> LiveSide:
        if run.side == "B":
            raise OSError("no room for B's run folder")
        started.append(spawn(tmp_path, WAITS, run.side))
        return started[-1]

    monkeypatch.setattr(interleaved, "start_side", start_side)
    manifest = SimpleNamespace(rounds=1, turn_s=None)
    with pytest.raises(OSError, match="no room"):
        interleaved.run_round(tmp_path, manifest,  # type: ignore[arg-type]
                              [side_run("A", 1), side_run("B", 2)], None,  # type: ignore[arg-type]
                              [], tmp_path / "pins.json", "cpu", lambda line: None)
    (first,) = started
    assert first.process.poll() is not None  # ended, not left measuring on its own
    assert first.log.closed
    assert first.process.stdin is not None and first.process.stdin.closed


def test_a_side_that_is_ready_takes_requests(tmp_path: Path) -> None:
    script = (f"import sys, json; print({READY!r}, flush=True); "
              "[print(json.dumps({'ok': True, 'echo': json.loads(l)['op']}), flush=True) "
              "for l in sys.stdin if json.loads(l)['op'] != 'exit']")
    side = spawn(tmp_path, script)
    assert side.ask({"op": "prepare", "cell": 0}, 30.0) == {"ok": True, "echo": "prepare"}
    assert side.close() == 0
