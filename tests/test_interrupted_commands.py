"""Ctrl-C, TERM and kill -9 at random moments into the commands that write files, other
than `run` and `ab` (test_kill_resume.py, test_ab_*): stopped by a signal, a command exits
130 with one line and no traceback, and leaves every output whole (the old file or the
new) and no temporary; killed, it leaves nothing the same command then refuses, and the
command run again writes every output whole. A failure names its seed."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kernbench.errors import EXIT_INTERRUPTED, EXIT_OK

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc"),
]

REPO = Path(__file__).resolve().parents[1]
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
LATEST_SIGNAL_S = 1.5  # about the longest of these commands here, start-up excluded
NAP = """\
name: nap
description: short spins
kernel: sleep
axes: {work_us: [10, 20]}
timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}
rounds: 2
"""
# A profile with measured CPU ceilings, as `calibrate --device cpu` writes one.
PROFILE = """\
name: this-cpu
description: measured
kind: cpu
match: []
peak_tflops:
  fp32: {measured: 0.2}
memory_gbs: {measured: 30.0}
calibration: {date: '2026-12-04T00:00:00Z', method: numpy copy}
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of two cells, with its figures and report."""
    folder = tmp_path_factory.mktemp("measured")
    (folder / "nap.yaml").write_text(NAP)
    ended = subprocess.run(
        [sys.executable, "-m", "kernbench", "run", "--bench", str(folder / "nap.yaml"),
         "--device", "cpu", "--out", str(folder / "run")],
        capture_output=True, text=True, timeout=120, env=ENVIRONMENT)
    assert ended.returncode == EXIT_OK, ended.stderr
    return folder / "run"


# No figure cache: every figure is drawn, so a signal can land while it is written.
ENVIRONMENT = {**os.environ, "KERNBENCH_CACHE_DIR": "off"}


# Each command: how to set up its folder, its arguments, and the files it writes there
# (relative to the folder). `{run}` is the measured run.
Setup = Callable[[Path, Path], None]


def copy_run(run: Path, work: Path) -> None:
    shutil.copytree(run, work / "run")


def fake_checkout(run: Path, work: Path) -> None:
    """A folder `schema` takes for a kernbench checkout: its copies are written there."""
    (work / "benches").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")


def profile(run: Path, work: Path) -> None:
    (work / "cpu.yaml").write_text(PROFILE)


SCHEMAS = [f"{folder}/{name}.schema.json" for folder in ("schemas", "kernbench/data/schemas")
           for name in ("bench", "hardware", "results")]
FIGURE = ["figures/time.png", "figures/time.json"]
COMMANDS: dict[str, tuple[Setup | None, list[str], list[str]]] = {
    "export": (None, ["export", "{run}", "--out", "e.csv"], ["e.csv"]),
    "compare": (None, ["compare", "{run}", "{run}", "--out", "c"],
                ["c/compare.md", "c/compare.json"]),
    "render": (None, ["render", "{run}", "--out", "figures"], FIGURE),
    "report": (None, ["report", "{run}/results.json", "--out", "."],
               ["report.md", "report.html", *FIGURE]),
    "collect": (copy_run, ["collect", "run"],
                [f"run/{name}" for name in ("results.json", "results.csv", "report.md",
                                            "report.html", *FIGURE)]),
    "schema": (fake_checkout, ["schema"], SCHEMAS),
    "calibrate --only": (profile, ["calibrate", "--device", "cpu", "--out", "cpu.yaml",
                                   "--only", "memory"], ["cpu.yaml"]),
}


def start(args: list[str], run: Path, work: Path) -> subprocess.Popen[str]:
    argv = [arg.replace("{run}", str(run)) for arg in args]
    return subprocess.Popen([sys.executable, "-m", "kernbench", *argv], cwd=work,
                            env=ENVIRONMENT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def armed(process: subprocess.Popen[str]) -> None:
    """Wait until the command handles TERM: a signal before that meets the interpreter
    starting, which no code of kernbench's can answer."""
    term = 1 << (signal.SIGTERM - 1)
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
        except OSError:
            return
        caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
        if int(caught.split()[1], 16) & term:
            return
        time.sleep(0.002)


def files(work: Path) -> dict[str, bytes]:
    return {p.relative_to(work).as_posix(): p.read_bytes()
            for p in sorted(work.rglob("*")) if p.is_file()}


def whole(name: str, data: bytes) -> bool:
    if name.endswith(".png"):
        return data.startswith(b"\x89PNG") and data.endswith(b"IEND\xaeB`\x82")
    if name.endswith(".json"):
        try:
            json.loads(data)
        except ValueError:
            return False
        return True
    return data.endswith(b"\n") or name.endswith(".html") and data.rstrip().endswith(b">")


def temporaries(found: dict[str, bytes]) -> list[str]:
    return [name for name in found if Path(name).name.startswith(".")]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_stopped_at_a_random_moment_leaves_whole_files_and_runs_again(
    command: str, measured: Path, tmp_path: Path
) -> None:
    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    setup, args, outputs = COMMANDS[command]
    work = tmp_path / "work"
    work.mkdir()
    if setup is not None:
        setup(measured, work)
    before = files(work)
    stop, delay = rng.choice(SIGNALS), rng.uniform(0.0, LATEST_SIGNAL_S)
    said = f"seed {seed}: {stop.name} after {delay:.2f} s"
    process = start(args, measured, work)
    armed(process)
    time.sleep(delay)
    running = process.poll() is None
    process.send_signal(stop)
    _, err = process.communicate(timeout=120)
    left = files(work)
    if stop != signal.SIGKILL:
        assert "Traceback" not in err, f"{said}: {err}"
        if running:
            assert process.returncode in (EXIT_INTERRUPTED, EXIT_OK), f"{said}: {err}"
        if process.returncode == EXIT_INTERRUPTED:
            assert err == "kernbench: interrupted\n", said
        assert temporaries(left) == temporaries(before), said
    for name, data in left.items():
        if name in outputs:
            assert whole(name, data), f"{said}: {name} cut"

    again = start(args, measured, work)
    _, err = again.communicate(timeout=120)
    assert again.returncode == EXIT_OK, f"{said}, then: {err}"
    written = files(work)
    for name in outputs:
        assert whole(name, written.get(name, b"")), f"{said}, then: {name} missing or cut"
    for name, data in left.items():  # what the stopped command wrote, the next writes too
        if name in outputs and name not in before and command not in ("collect",
                                                                       "calibrate --only"):
            assert written[name] == data, f"{said}: {name} is not what the command writes"
