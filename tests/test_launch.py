from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernbench.execute.launch import _parse, launch_env, launcher_argv, worker_argv

SCRIPT = Path(__file__).with_name("collective_ranks.py")
REPO = Path(__file__).resolve().parents[1]


def test_one_rank_needs_no_launcher() -> None:
    argv = worker_argv(1, Path("/runs/x/tasks/r1.json"), "cpu")
    assert argv == [sys.executable, "-m", "kernbench.execute.worker", "/runs/x/tasks/r1.json"]


def test_several_ranks_go_through_the_elastic_launcher() -> None:
    argv = worker_argv(4, Path("t.json"), "cuda")
    assert argv == [
        sys.executable,
        "-m",
        "kernbench.execute.launch",
        "--nproc-per-node",
        "4",
        "-m",
        "kernbench.execute.worker",
        "t.json",
    ]
    assert _parse(argv[3:]).target == ["-m", "kernbench.execute.worker", "t.json"]


def test_world_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        worker_argv(0, Path("t.json"), "cpu")


def test_launcher_arguments_are_checked() -> None:
    with pytest.raises(SystemExit, match="give -m MODULE or a script"):
        _parse(["--nproc-per-node", "2"])
    with pytest.raises(SystemExit, match="start with --nproc-per-node N"):
        _parse(["-m", "kernbench.execute.worker", "t.json"])
    with pytest.raises(SystemExit, match="at least 1"):
        _parse(["--nproc-per-node", "0", "x.py"])
    assert _parse(["--nproc-per-node", "2", "x.py", "--flag"]).target == ["x.py", "--flag"]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_nvlink_multicast_stays_off(device: str) -> None:
    env = launch_env(device)
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"


def _start(*args: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    """Two ranks of the test script, in a session of their own as the runner starts them."""
    env = {**os.environ, **launch_env("cpu"), "PYTHONPATH": str(REPO)}
    with open(log or os.devnull, "wb") as out:
        return subprocess.Popen(
            launcher_argv(2, [str(SCRIPT), *args]),
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE if log is None else out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.mark.slow
def test_a_dead_rank_ends_the_launch_nonzero_and_soon() -> None:
    began = time.monotonic()
    process = _start("die")
    try:
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert time.monotonic() - began < 60
    assert process.returncode == 9, output.decode()[-2000:]
    assert b"kernbench.execute.launch: rank 1" in output and b"exit code 9" in output


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and prctl")
def test_no_rank_outlives_its_launcher(tmp_path: Path) -> None:
    log = tmp_path / "launch.log"
    process = _start("sleep", str(tmp_path), log=log)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("rank*.json"))) < 2 and time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(log.read_text()[-2000:])
            time.sleep(0.2)
        ranks = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("rank*.json"))]
        assert len(ranks) == 2
        # In the launcher's process group: the runner's killpg reaches every rank.
        assert {rank["pgid"] for rank in ranks} == {process.pid}
        # Killing only the agent still takes the ranks with it (parent-death signal).
        process.kill()
        process.wait()
        deadline = time.monotonic() + 10
        while any(_alive(rank["pid"]) for rank in ranks) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(rank["pid"]) for rank in ranks)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
