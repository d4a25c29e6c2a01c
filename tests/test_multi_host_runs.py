"""Two kernbench processes as two hosts on this machine (gloo, two ranks each, one
rendezvous endpoint): one 4-rank job, and what happens when a host dies or never comes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernbench.errors import EXIT_FAILED, EXIT_OK
from kernbench.results import model as results_io
from tests.time_limit import time_limit

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 15  # the rendezvous and collective timeouts of these runs


def write_bench(folder: Path, sizes: list[int], rounds: int = 1, budget_s: float = 0.05) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "ccl4.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: ccl-hosts
        description: four gloo ranks over two hosts
        kernel: collective
        axes:
          op: [allreduce]
          world_size: [4]
          bytes: {sizes}
          inplace: [true]
          dtype: [fp32]
        metrics:
          bytes: bytes
        timer: {{warmup_s: 0.0, budget_s: {budget_s}, min_samples: 3, cell_timeout_s: 60}}
        rounds: {rounds}
        """))
    return bench


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_host(bench: Path, out: Path, node_rank: int, port: int) -> subprocess.Popen[bytes]:
    """One "host": `kernbench run` in a session of its own, as a batch system starts it."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "KERNBENCH_RENDEZVOUS_TIMEOUT_S": str(TIMEOUT_S),
           "KERNBENCH_COLLECTIVE_TIMEOUT_S": str(TIMEOUT_S)}
    argv = [sys.executable, "-m", "kernbench", "run", "--bench", str(bench), "--device", "cpu",
            "--out", str(out), "--no-figures", "--nnodes", "2", "--node-rank", str(node_rank),
            "--nproc-per-node", "2", "--rdzv-endpoint", f"127.0.0.1:{port}"]
    log = open(out.parent / f"node{node_rank}.log", "wb")  # the child keeps its own copy
    try:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    finally:
        log.close()


def kill_host(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def wait_all(*processes: subprocess.Popen[bytes], seconds: int) -> list[int]:
    try:
        with time_limit(seconds):
            return [process.wait() for process in processes]
    finally:
        for process in processes:
            kill_host(process)


def log_of(tmp_path: Path, node_rank: int) -> str:
    return (tmp_path / f"node{node_rank}.log").read_text(errors="replace")


def test_two_hosts_run_one_four_rank_job(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", [1024, 4096])
    out, port = tmp_path / "out", free_port()
    hosts = [start_host(bench, out, rank, port) for rank in (0, 1)]
    codes = wait_all(*hosts, seconds=240)
    assert codes == [EXIT_OK, EXIT_OK], log_of(tmp_path, 0) + log_of(tmp_path, 1)
    results = results_io.load(out / "results.json")
    assert results.topology is not None
    assert (results.topology.world_size, results.topology.nnodes) == (4, 2)
    assert results.topology.hosts == [socket.gethostname()] * 2
    for cell in results.cells:
        assert cell.status == "ok" and cell.params["world_size"] == 4
        (measured,) = cell.rounds
        assert measured.check is not None and measured.check.rel_err == 0.0
        assert len(measured.extra["per_rank_median_s"]) == 4
    # The other host wrote no results, only its logs, in a folder named for it.
    follower = tmp_path / "out.node1"
    assert not (follower / "results.json").exists() and (follower / "logs").is_dir()
    assert "its results are on node 0" in log_of(tmp_path, 1)


def test_a_host_killed_mid_run_fails_the_cells_left_and_the_other_exits(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", [1024, 2048, 4096, 8192, 16384], rounds=2, budget_s=1.0)
    out, port = tmp_path / "out", free_port()
    leader, follower = (start_host(bench, out, rank, port) for rank in (0, 1))
    journal = out / "journal" / "r1"
    try:
        with time_limit(120):
            while not [p for p in journal.glob("0*.json")] and leader.poll() is None:
                time.sleep(0.2)
    finally:
        kill_host(follower)  # the host dies: its runner, its agent, its ranks
    killed = time.monotonic()
    (code,) = wait_all(leader, seconds=4 * TIMEOUT_S + 60)
    assert time.monotonic() - killed < 4 * TIMEOUT_S, log_of(tmp_path, 0)
    assert code == EXIT_FAILED
    results = results_io.load(out / "results.json")
    assert results.complete
    failed = [cell for cell in results.cells if cell.status == "failed"]
    assert failed, log_of(tmp_path, 0)
    reasons = " ".join(r.reason or "" for cell in failed for r in cell.rounds)
    assert "the hosts did not meet" in reasons and "not all 2 hosts joined" in reasons


def test_the_other_host_leaves_when_the_leader_dies(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", [1024, 2048, 4096], rounds=2, budget_s=1.0)
    out, port = tmp_path / "out", free_port()
    leader, follower = (start_host(bench, out, rank, port) for rank in (0, 1))
    try:
        with time_limit(120):
            while not list((out / "journal" / "r1").glob("0*.json")):
                assert leader.poll() is None, log_of(tmp_path, 0)
                time.sleep(0.2)
    finally:
        kill_host(leader)
    (code,) = wait_all(follower, seconds=2 * TIMEOUT_S + 30)
    assert code == EXIT_FAILED
    assert "the leader (node 0 at 127.0.0.1" in log_of(tmp_path, 1)
    assert not (tmp_path / "out.node1" / "results.json").exists()


def test_a_host_that_never_joins_fails_every_cell_within_the_timeout(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", [1024, 4096], rounds=2)
    out = tmp_path / "out"
    began = time.monotonic()
    (code,) = wait_all(start_host(bench, out, 0, free_port()), seconds=TIMEOUT_S + 60)
    assert time.monotonic() - began < TIMEOUT_S + 45
    assert code == EXIT_FAILED
    results = results_io.load(out / "results.json")
    assert results.topology is not None and results.topology.hosts[1] is None
    for cell in results.cells:
        assert [r.status for r in cell.rounds] == ["failed", "failed"]
        assert "not all 2 hosts joined within 15 s" in (cell.rounds[0].reason or "")
        assert (cell.rounds[1].reason or "").startswith("not run: the hosts did not meet")
