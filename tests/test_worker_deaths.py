"""A worker's death costs only the cell in flight, whatever the exit code; what a kernel
forks dies with its worker; a cell that times out gets its progress line."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from time_limit import time_limit

from kernbench.ab.run import run_ab
from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_FAILED, EXIT_OK
from kernbench.results import model as results_io

pytestmark = pytest.mark.slow

FACTORY = '''
import os, subprocess, sys, time

def make(n, mode="ok", marker="", **_):
    if n == 16 and os.environ.get("KERNBENCH_ROUND") == "1":
        if mode == "sys_exit":
            sys.exit(0)
        if mode == "quiet_exit":
            sys.exit(3)
        if mode == "os_exit":
            os._exit(0)
        if mode == "hang":
            return lambda: time.sleep(3600)
    if mode == "last_words" and os.environ.get("KERNBENCH_ROUND") == "1" and n in (8, 16):
        print(f"the kernel of n={n} says goodbye", flush=True)
        os._exit(3 if n == 8 else 4)
    if mode == "chatty" and os.environ.get("KERNBENCH_ROUND") == "1":
        print(f"n={n} is built", flush=True)
        if n == 16:
            os._exit(5)
    if mode == "fork" and n == 16:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(marker, "w") as handle:
            handle.write(str(child.pid))
    return lambda: sum(range(n))
'''


def write_bench(folder: Path, mode: str, rounds: int = 1, timeout: float = 60.0,
                marker: Path | None = None, turns: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "deaths.py").write_text(FACTORY)
    bench = folder / "deaths.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: deaths-{mode.replace("_", "-")}
        description: kernels that end their process
        kernel: deaths:make
        axes:
          n: [8, 16, 32]
        variants:
          v: {{mode: {mode}, marker: "{marker or ''}"}}
        timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3, cell_timeout_s: {timeout},
                 turns: {turns}}}
        rounds: {rounds}
        """))
    return bench


@pytest.mark.parametrize("mode", ["sys_exit", "os_exit"])
def test_a_kernel_that_exits_0_costs_only_its_own_cell(tmp_path: Path, mode: str) -> None:
    bench = write_bench(tmp_path / "b", mode, rounds=2)
    out = tmp_path / "out"
    assert run(RunRequest(bench=str(bench), out=out, device="cpu")) == EXIT_FAILED
    cells = {c.params["n"]: c for c in results_io.load(out / "results.json").cells}
    assert cells[16].status == "failed"
    assert (cells[16].reason or "").startswith("round 1: worker exited with exit code 0")
    # A fresh worker measured the cell after it, and round 2 measured all three.
    assert cells[8].status == cells[32].status == "ok"
    assert [r.round for r in cells[32].rounds] == [1, 2]


def test_a_worker_that_dies_without_a_word_is_said_to_have_printed_nothing(
    tmp_path: Path,
) -> None:
    bench = write_bench(tmp_path / "b", "quiet_exit")
    out = tmp_path / "out"
    assert run(RunRequest(bench=str(bench), out=out, device="cpu")) == EXIT_FAILED
    cells = {c.params["n"]: c for c in results_io.load(out / "results.json").cells}
    assert cells[16].reason == "round 1: worker exited with exit code 3, printing nothing"


def test_a_dead_workers_reason_holds_its_own_last_words_and_4_is_no_rendezvous(
    tmp_path: Path,
) -> None:
    # Two workers of round 1 die, one after the other, into the round's one log; exit code 4
    # is the rendezvous failure's only where hosts meet.
    bench = write_bench(tmp_path / "b", "last_words", rounds=2)
    out = tmp_path / "out"
    assert run(RunRequest(bench=str(bench), out=out, device="cpu")) == EXIT_FAILED
    cells = {c.params["n"]: c for c in results_io.load(out / "results.json").cells}
    for n, code in ((8, 3), (16, 4)):
        assert cells[n].reason == (
            f"round 1: worker exited with exit code {code}: the kernel of n={n} says goodbye")
        assert [r.round for r in cells[n].rounds if r.status == "ok"] == [2]
    assert cells[32].status == "ok" and [r.round for r in cells[32].rounds] == [1, 2]


@pytest.mark.parametrize("turns", [1, 2])
def test_a_dead_workers_reason_leaves_out_what_its_earlier_cells_printed(
    tmp_path: Path, turns: int
) -> None:
    # n=8 prints and is measured (or, in turns, held) by the worker n=16 then kills.
    bench = write_bench(tmp_path / "b", "chatty", turns=turns)
    out = tmp_path / "out"
    assert run(RunRequest(bench=str(bench), out=out, device="cpu")) == EXIT_FAILED
    cells = {c.params["n"]: c for c in results_io.load(out / "results.json").cells}
    assert cells[16].reason == "round 1: worker exited with exit code 5: n=16 is built"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie waits for its reaper; it runs nothing


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_what_a_kernel_forks_dies_with_its_worker(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    bench = write_bench(tmp_path / "b", "fork", marker=marker)
    assert run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu")) == EXIT_OK
    child = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not _alive(child)
    finally:
        if _alive(child):
            os.kill(child, 9)


def test_a_timed_out_cell_gets_a_progress_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = write_bench(tmp_path / "b", "hang", timeout=1.0)
    request = RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu", order_seed="plan")
    assert run(request) == EXIT_FAILED
    lines = capsys.readouterr().out.splitlines()
    assert "[2/3] r1 v/n=16: FAILED timeout: cell ran longer than 1 s" in lines
    assert [line[:5] for line in lines if line.startswith("[")] == ["[1/3]", "[2/3]", "[3/3]"]


def test_a_worker_that_hangs_before_its_first_cell_fails_its_cells_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel module whose import never ends (as a wedged device's start-up): without a
    bound on the start-up, no cell is in flight to time out and the run waits forever."""
    from kernbench.execute import launch

    (tmp_path / "stuck.py").write_text(
        "import os, time\n"
        "if os.environ.get('KERNBENCH_ROUND'):  # in a worker, not as the run checks the bench\n"
        "    time.sleep(3600)\n"
        "def make(n, **_):\n    return lambda: n\n")
    bench = tmp_path / "stuck.yaml"
    bench.write_text("name: stuck\ndescription: its import never ends\nkernel: stuck:make\n"
                     "axes: {n: [1, 2]}\ntimer: {warmup_s: 0.0, budget_s: 0.01}\nrounds: 1\n")
    monkeypatch.setattr(launch, "START_TIMEOUT_S", 0.5)
    out = tmp_path / "out"
    with time_limit(120):  # the hang, without the bound: a failure, not a stuck suite
        assert run(RunRequest(bench=str(bench), out=out, device="cpu")) == EXIT_FAILED
    reasons = {c.reason for c in results_io.load(out / "results.json").cells}
    assert reasons == {"round 1: timeout: the worker reached no cell within 0.5 s"}


SIDE_KERNEL = """\
import os, subprocess, sys

def make(work_us=50, marker="", **_):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(os.path.join(marker, str(child.pid)), "w"):
        pass
    return lambda: sum(range(work_us))
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_what_an_interleaved_side_forks_dies_with_it(tmp_path: Path) -> None:
    markers = tmp_path / "children"
    markers.mkdir()
    (tmp_path / "forks.py").write_text(SIDE_KERNEL)
    bench = tmp_path / "forks.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: forks
        description: a kernel that forks
        kernel: forks:make
        variants: {{v: {{marker: "{markers}"}}}}
        timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3}}
        ab: {{switch: KB_F, rounds: 2}}
        """))
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu", echo=lambda line: None)
    assert outcome.exit_code == EXIT_OK
    children = [int(p.name) for p in markers.iterdir()]
    assert len(children) == 4  # one per side and round
    deadline = time.monotonic() + 5
    while any(map(_alive, children)) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [pid for pid in children if _alive(pid)]
    for pid in alive:
        os.kill(pid, 9)
    assert alive == []


KILLED_ONCE = '''
import os, signal, sys
from pathlib import Path
marker = Path(sys.argv[1])
if not marker.exists():  # the first worker: killed from outside before it starts a cell
    marker.write_text("killed")
    os.kill(os.getpid(), signal.SIGKILL)
os.execv(sys.argv[2], sys.argv[2:])
'''


@pytest.mark.parametrize("deaths", [1, 2])
def test_a_worker_killed_before_its_first_cell_gets_one_fresh_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deaths: int
) -> None:
    from kernbench.execute import launch

    wrapper = tmp_path / "killed_once.py"
    wrapper.write_text(KILLED_ONCE)
    markers = [tmp_path / f"killed{i}" for i in range(deaths)]
    real = launch.worker_argv

    def argv(*args, **kwargs) -> list[str]:
        marker = next((m for m in markers if not m.exists()), markers[-1])
        return [sys.executable, str(wrapper), str(marker), *real(*args, **kwargs)]

    monkeypatch.setattr(launch, "worker_argv", argv)
    bench = write_bench(tmp_path / "b", "ok")
    out = tmp_path / "out"
    code = run(RunRequest(bench=str(bench), out=out, device="cpu"))
    cells = results_io.load(out / "results.json").cells
    if deaths == 1:  # the fresh worker measures every cell
        assert code == EXIT_OK and [c.status for c in cells] == ["ok"] * 3
    else:  # killed again before a cell: the cells fail, rather than retry for ever
        assert code == EXIT_FAILED and [c.status for c in cells] == ["failed"] * 3
        assert "signal SIGKILL" in (cells[0].reason or "")
