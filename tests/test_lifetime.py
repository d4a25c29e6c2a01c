"""A worker (or an interleaved A/B side) whose runner died before it could ask to die with
it (a kill -9 while it still imports) ends at once: it must not measure beside the
`--resume` that follows."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernbench.execute.journal import TASK, Task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG"),
]

# A runner's stand-in: starts the worker as the runner does, prints its pid and dies at
# once, long before the worker's imports (about a second) are done.
RUNNER = textwrap.dedent("""\
    import os, subprocess, sys
    from kernbench.execute.worker_task import worker_env
    worker = subprocess.Popen([sys.executable, "-m", "kernbench.execute.worker", sys.argv[1]],
                              env=worker_env("cpu", 1, ""), stdout=subprocess.DEVNULL,
                              start_new_session=True)
    print(worker.pid, flush=True)
    os._exit(0)
    """)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def write_task(tmp_path: Path) -> tuple[Path, Path]:
    """A task of two short cells, and the journal folder it writes into."""
    bench = tmp_path / "nap.yaml"
    bench.write_text(textwrap.dedent("""\
        name: nap
        description: short spins
        kernel: sleep
        axes: {work_us: [10, 20]}
        timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}
        """))
    journal = tmp_path / "journal"
    task = tmp_path / "r1.json"
    TASK.write(task, Task(bench_path=str(bench), round=1, device="cpu", cells=[0, 1],
                          journal_dir=str(journal)))
    return task, journal


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 60
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_a_worker_whose_runner_died_while_it_started_measures_nothing(tmp_path: Path) -> None:
    task, journal = write_task(tmp_path)
    started = subprocess.run([sys.executable, "-c", RUNNER, str(task)], capture_output=True,
                             text=True, check=True)
    assert wait_gone(int(started.stdout))
    assert not list(journal.glob("r1/*.json"))


# An A/B runner's stand-in: starts an interleaved side as `ab.interleaved.start_side` does,
# its requests coming from the test (which keeps that pipe open, as a side's kernels or
# another side could), prints its pid and dies at once.
AB_RUNNER = textwrap.dedent("""\
    import os, subprocess, sys
    from kernbench.ab.interleaved import SIDE_MODULE, side_process_env
    side = subprocess.Popen([sys.executable, "-m", SIDE_MODULE, sys.argv[1]],
                            stdout=open(sys.argv[2], "w"), stderr=subprocess.DEVNULL,
                            env=side_process_env({}),
                            start_new_session=True)
    print(side.pid, flush=True)
    os._exit(0)
    """)


def test_an_ab_side_whose_runner_died_while_it_started_ends_unready(tmp_path: Path) -> None:
    task, _ = write_task(tmp_path)
    replies = tmp_path / "replies"
    requests, held = os.pipe()
    try:
        started = subprocess.run([sys.executable, "-c", AB_RUNNER, str(task), str(replies)],
                                 stdin=requests, capture_output=True, text=True, check=True)
        assert wait_gone(int(started.stdout))
    finally:
        os.close(held)
        os.close(requests)
    assert replies.read_text() == ""  # never said it was ready for a turn
