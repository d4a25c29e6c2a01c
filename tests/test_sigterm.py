"""A TERM signal (`timeout`, a job scheduler) or a HUP (the terminal closed) ends
`kernbench run` as Ctrl-C does: the cells measured are kept in results.json, the rest
pending, exit 130; so does a reader of its progress that went away (`| head`), with exit
141. A HUP that `nohup` ignores stays ignored. Stopped after its last cell, a run is
complete, not interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernbench.commands import run as run_command
from kernbench.errors import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_OK
from kernbench.units import counted
from kernbench.worker_env import PARENT_PID_ENV

pytestmark = pytest.mark.slow

BENCH = """\
name: long-nap
description: spins long enough to be stopped
kernel: sleep
axes: {work_us: [100, 200, 300, 400, 500, 600]}
timer: {warmup_s: 0.0, budget_s: 0.4, min_time_s: 0.4, min_samples: 3}
rounds: 2
"""


# Four cells in one round, each long enough for a reader to leave before the next's line.
SHORT = BENCH.replace("100, 200, 300, 400, 500, 600", "100, 200, 300, 400").replace(
    "budget_s: 0.4, min_time_s: 0.4", "budget_s: 0.2, min_time_s: 0.2").replace(
    "rounds: 2", "rounds: 1")


def start_run(tmp_path: Path, text: str = BENCH) -> tuple[subprocess.Popen[str], Path]:
    """`kernbench run` of `text` into `tmp_path/out`, its stdout and stderr piped here."""
    bench = tmp_path / "long-nap.yaml"
    bench.write_text(text)
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "kernbench", "run", "--bench", str(bench), "--device", "cpu",
         "--out", str(out), "--no-figures"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return process, out


def test_a_terminated_run_keeps_what_it_measured(tmp_path: Path) -> None:
    process, out = start_run(tmp_path)
    deadline = time.monotonic() + 60
    while not list((out / "journal").glob("r1/0*.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert "interrupted:" in err and "kernbench run --resume" in err
    cells = json.loads((out / "results.json").read_text())["cells"]
    statuses = [cell["status"] for cell in cells]
    assert "pending" in statuses
    kept = [r for cell in cells for r in cell["rounds"] if r["status"] == "ok"]
    assert kept and all(r["samples_s"] for r in kept)  # measured rounds, with their samples
    complete = sum(status != "pending" for status in statuses)
    assert f"interrupted: {counted(len(kept), 'cell round')} kept, {complete} of 6 cells complete" \
        in err


def test_a_run_whose_reader_went_away_keeps_what_it_measured(tmp_path: Path) -> None:
    process, out = start_run(tmp_path)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()  # `| head -1`
    process.stdout.close()
    with process.stderr:
        err = process.stderr.read()
    assert process.wait(timeout=60) == EXIT_BROKEN_PIPE, err
    cells = json.loads((out / "results.json").read_text())["cells"]
    assert "pending" in [cell["status"] for cell in cells]
    kept = sum(len(cell["rounds"]) for cell in cells)
    assert kept and err.startswith(f"interrupted: {counted(kept, 'cell round')} kept,")
    assert err.rstrip().endswith(f"finish with: kernbench run --resume {out}")


def assert_complete(out: Path) -> None:
    results = json.loads((out / "results.json").read_text())
    assert results["complete"]
    assert [cell["status"] for cell in results["cells"]] == ["ok"] * 4
    assert (out / "report.md").is_file()


def test_a_run_whose_reader_left_before_its_last_line_is_complete(tmp_path: Path) -> None:
    process, out = start_run(tmp_path, SHORT)
    assert process.stdout is not None and process.stderr is not None
    lines = [process.stdout.readline() for _ in range(3)]  # `| head -n 3` of 4 cells' lines
    process.stdout.close()
    assert lines[-1].startswith("[3/4] ")
    with process.stderr:
        err = process.stderr.read()
    assert process.wait(timeout=60) == EXIT_BROKEN_PIPE, err  # as any command's reader gone
    assert "interrupted" not in err, err
    assert_complete(out)


def test_a_run_stopped_as_its_last_cell_was_kept_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    measure_all = run_command.execute

    def then_ctrl_c(run: run_command.RunFolder) -> list:
        measure_all(run)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_command, "execute", then_ctrl_c)
    bench = tmp_path / "short-nap.yaml"
    bench.write_text(SHORT)
    out = tmp_path / "out"
    code = run_command.run(run_command.RunRequest(bench=str(bench), out=out, device="cpu",
                                                  figures=False))
    assert code == EXIT_OK
    assert "interrupted" not in capsys.readouterr().err
    assert_complete(out)


def four_cell_bench(folder: Path, module: str, source: str) -> Path:
    """A bench of four cells (n = 1..4) whose kernel is `source`, written as `module`.py."""
    (folder / f"{module}.py").write_text(source)
    bench = folder / f"{module.replace('_', '-')}.yaml"
    bench.write_text(f"name: {module.replace('_', '-')}\ndescription: its terminal closes\n"
                     f"kernel: {module}:make\naxes: {{n: [1, 2, 3, 4]}}\n"
                     "timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}\nrounds: 1\n")
    return bench


HANGS_UP = f"""
import os, signal

def make(n, **_):
    if n == 3:  # the runner's terminal closes as this cell starts
        os.kill(int(os.environ["{PARENT_PID_ENV}"]), signal.SIGHUP)
    return lambda: sum(range(n))
"""


@pytest.mark.parametrize("nohup", [False, True], ids=["hangup", "nohup"])
def test_a_hangup_ends_a_run_as_ctrl_c_does_unless_nohup_ignores_it(
    tmp_path: Path, nohup: bool
) -> None:
    bench = four_cell_bench(tmp_path, "hangs_up", HANGS_UP)
    out = tmp_path / "out"
    ignore = (lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if nohup else None
    process = subprocess.run(
        [sys.executable, "-m", "kernbench", "run", "--bench", str(bench), "--device", "cpu",
         "--out", str(out), "--order-seed", "plan", "--no-figures"],
        capture_output=True, text=True, timeout=120, preexec_fn=ignore,
    )
    statuses = [c["status"] for c in json.loads((out / "results.json").read_text())["cells"]]
    if nohup:
        assert (process.returncode, statuses) == (EXIT_OK, ["ok"] * 4), process.stderr
        return
    assert process.returncode == EXIT_INTERRUPTED, process.stderr
    assert statuses == ["ok", "ok", "pending", "pending"]
    assert process.stderr.rstrip().endswith(f"finish with: kernbench run --resume {out}")


CLOSES_TERMINAL = """
import os, pathlib, time

def make(n, **_):
    if n == 3:  # the test closes the runner's terminal and hangs it up as this cell starts
        here = pathlib.Path(__file__).parent
        (here / "cell-3-started").touch()
        while not (here / "hung-up").exists():
            time.sleep(0.01)
    return lambda: sum(range(n))
"""


def test_a_run_whose_terminal_closed_keeps_what_it_measured(tmp_path: Path) -> None:
    pty = pytest.importorskip("pty")
    bench = four_cell_bench(tmp_path, "closes_terminal", CLOSES_TERMINAL)
    out = tmp_path / "out"
    master, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "kernbench", "run", "--bench", str(bench), "--device", "cpu",
         "--out", str(out), "--order-seed", "plan", "--no-figures"],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path,
    )
    os.close(terminal)
    deadline = time.monotonic() + 60
    os.set_blocking(master, False)
    while not (tmp_path / "cell-3-started").exists() and time.monotonic() < deadline:
        try:
            os.read(master, 65536)  # the progress bar, drawn on the terminal
        except BlockingIOError:
            time.sleep(0.01)
    os.close(master)  # the terminal is gone: every write to it now fails
    process.send_signal(signal.SIGHUP)
    (tmp_path / "hung-up").touch()
    assert process.wait(timeout=60) == EXIT_INTERRUPTED
    statuses = [c["status"] for c in json.loads((out / "results.json").read_text())["cells"]]
    assert statuses == ["ok", "ok", "pending", "pending"]
