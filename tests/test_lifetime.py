"""A worker whose runner died before the worker could ask to die with it (a kill -9 while
the worker still imports) ends at once: it must not measure beside the `--resume` that
follows."""

from __future__ import annotations

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
    from kernbench.execute.rounds import worker_env
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


def test_a_worker_whose_runner_died_while_it_started_measures_nothing(tmp_path: Path) -> None:
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
    started = subprocess.run([sys.executable, "-c", RUNNER, str(task)], capture_output=True,
                             text=True, check=True)
    worker = int(started.stdout)
    deadline = time.monotonic() + 60
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)
    assert not list(journal.glob("r1/*.json"))
