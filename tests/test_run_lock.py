"""A run folder is locked while a kernbench measures it: a second `--resume` is one line
(exit 2), the lock goes with its process however it ends, a stale one is taken over."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute.lock import LOCK_NAME, folder_lock

runner = CliRunner()


def slow_bench(folder: Path, cells: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "slow.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: slow
        description: cells of a tenth of a second
        kernel: sleep
        axes: {{work_us: {[100_000 + i for i in range(cells)]}}}
        timer: {{warmup_s: 0.0, budget_s: 0.05, min_samples: 3}}
        """))
    return bench


def test_a_held_lock_refuses_a_second_holder_with_one_line(tmp_path: Path) -> None:
    notes: list[str] = []
    with folder_lock(tmp_path, notes.append):
        with pytest.raises(UserError) as refused:
            with folder_lock(tmp_path, notes.append):
                pass
    assert refused.value.code == EXIT_USAGE
    assert refused.value.message == (
        f"{tmp_path}: in use by another kernbench (pid {os.getpid()}); wait for it to end, "
        "or stop it"
    )
    assert notes == []
    assert not (tmp_path / LOCK_NAME).exists()  # released: the file means "in use"
    with folder_lock(tmp_path, notes.append):
        assert (tmp_path / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_lock_won_on_a_file_its_holder_removed_is_taken_again(tmp_path: Path) -> None:
    """The holder removes the file before letting go: one who opened it before then and
    wins its flock after holds a file no one else sees, and must open the new one."""
    import fcntl

    from kernbench.execute import lock

    stale = os.open(tmp_path / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    (tmp_path / LOCK_NAME).unlink()  # as a holder lets go, after `stale` was opened
    opened = [stale]
    real_open = os.open

    def first_the_stale_file(path: object, *args: object) -> int:
        return opened.pop() if opened else real_open(path, *args)  # type: ignore[arg-type]

    fd = None
    try:
        os.open = first_the_stale_file  # type: ignore[assignment]
        fd = lock._open_lock(tmp_path, tmp_path / LOCK_NAME)
    finally:
        os.open = real_open
    assert os.fstat(fd).st_ino == os.stat(tmp_path / LOCK_NAME).st_ino
    with pytest.raises(BlockingIOError):  # held: on the file the folder holds
        other = os.open(tmp_path / LOCK_NAME, os.O_RDWR)
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
    os.close(fd)


def test_a_stale_lock_is_taken_over_with_a_note(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = dead.stdout.strip()
    (tmp_path / LOCK_NAME).write_text(f"{pid}\n")
    notes: list[str] = []
    with folder_lock(tmp_path, notes.append):
        pass
    assert notes == [f"note: {tmp_path}: taking over the lock left by pid {pid}, which ended "
                     "without releasing it"]


@pytest.mark.slow
def test_a_second_resume_of_a_running_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "kernbench", "run", "--bench", str(slow_bench(tmp_path)),
         "--device", "cpu", "--out", str(out), "--no-figures"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (out / "run.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        second = runner.invoke(cli.app, ["run", "--resume", str(out)])
        assert second.exit_code == EXIT_USAGE
        assert second.stderr == (
            f"{out}: in use by another kernbench (pid {first.pid}); wait for it to end, "
            "or stop it\n"
        )
        # kill -9: the kernel drops the lock with the process; a resume takes over.
        first.kill()
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    third = runner.invoke(cli.app, ["run", "--resume", str(out)])
    assert third.exit_code == EXIT_OK, third.output
    assert f"taking over the lock left by pid {first.pid}" in third.stderr
    assert not (out / LOCK_NAME).exists()  # a finished run's folder holds no lock
    collected = runner.invoke(cli.app, ["collect", str(out)])
    assert collected.exit_code == EXIT_OK and not (out / LOCK_NAME).exists()


def test_a_new_run_into_a_live_runs_folder_names_its_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not `use --resume` (which the lock would refuse): the run there is still going."""
    from kernbench.results import provenance

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    bench, out = slow_bench(tmp_path), tmp_path / "out"
    start = ["run", "--bench", str(bench), "--device", "cpu", "--out", str(out)]
    monkeypatch.setattr(provenance, "collect", interrupted)  # run.json, then no cell
    assert runner.invoke(cli.app, start).exit_code == 130
    monkeypatch.undo()
    with folder_lock(out, lambda line: None):  # the run goes on in another process
        second = runner.invoke(cli.app, start)
    assert (second.exit_code, second.stderr) == (EXIT_USAGE, (
        f"{out}: in use by another kernbench (pid {os.getpid()}); wait for it to end, "
        "or stop it\n"))
