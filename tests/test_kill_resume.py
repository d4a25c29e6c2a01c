"""kill -9 of a real `kernbench run` at random moments, 20 times, each followed by
`--resume`: every cell ends measured exactly once per round, and no entry a kill left
behind is measured again."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernbench.execute.journal import JOURNAL
from kernbench.results import model as results_io

pytestmark = pytest.mark.slow

KILLS = 20
CELLS = 5
ROUNDS = 2
LONGEST_RUN_S = 2.0  # about a whole run of the bench below, start-up included


def write_bench(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "nap.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: nap
        description: short spins
        kernel: sleep
        axes: {{work_us: {[10 * (i + 1) for i in range(CELLS)]}}}
        timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3}}
        rounds: {ROUNDS}
        """))
    return bench


def start(bench: Path, out: Path, log: Path) -> subprocess.Popen[bytes]:
    """`kernbench run --resume OUT` when OUT holds a run, else a new run into OUT."""
    if (out / "run.json").exists():
        argv = ["--resume", str(out)]
    else:
        argv = ["--bench", str(bench), "--device", "cpu", "--out", str(out), "--no-figures"]
    with log.open("ab") as handle:
        return subprocess.Popen([sys.executable, "-m", "kernbench", "run", *argv],
                                stdout=subprocess.DEVNULL, stderr=handle)


def workers_of(out: Path) -> list[int]:
    """Live processes whose command line names the run folder (its workers)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if str(out).encode() in cmdline:
            found.append(int(proc.name))
    return found


def wait_for_workers(out: Path) -> None:
    deadline = time.monotonic() + 10
    while workers_of(out) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not workers_of(out), "a worker outlived its killed runner"


def entries(out: Path) -> dict[Path, bytes]:
    """Every journal entry, checked to be whole and to be the cell and round it names."""
    found = {}
    for path in sorted((out / "journal").glob("r*/0*.json")):
        entry = JOURNAL.read(path)
        assert path.name == f"{entry.index:05d}.json"
        assert path.parent.name == f"r{entry.result.round}"
        assert entry.result.status == "ok", entry.result.reason
        found[path] = path.read_bytes()
    return found


def check_finished(out: Path, seen: dict[Path, bytes]) -> None:
    now = entries(out)
    assert len(now) == CELLS * ROUNDS
    assert all(now[path] == data for path, data in seen.items()), "an entry was re-measured"
    assert not list((out / "journal").glob("r*/*.damaged"))
    results = results_io.load(out / "results.json")
    assert results.complete
    for cell in results.cells:
        assert cell.status == "ok"
        assert [r.round for r in cell.rounds] == list(range(1, ROUNDS + 1))


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_kill_9_at_random_moments_then_resume_measures_each_cell_once(tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    bench = write_bench(tmp_path / "b")
    log = tmp_path / "stderr.log"
    runs, kills = 0, 0
    out = tmp_path / f"run{runs}"
    seen: dict[Path, bytes] = {}
    process = start(bench, out, log)
    while kills < KILLS:
        time.sleep(rng.uniform(0.0, LONGEST_RUN_S))
        if process.poll() is None:
            process.kill()
            process.wait()
            kills += 1
            wait_for_workers(out)
            now = entries(out)
            assert all(now[path] == data for path, data in seen.items()), f"seed {seed}"
            seen = now
        else:
            assert process.returncode == 0, f"seed {seed}: {log.read_text()}"
            check_finished(out, seen)
            runs += 1
            out, seen = tmp_path / f"run{runs}", {}
        process = start(bench, out, log)
    assert process.wait(timeout=60) == 0, f"seed {seed}: {log.read_text()}"
    check_finished(out, seen)
    assert "Traceback" not in log.read_text()
