"""The run engine end to end on the CPU: workers, failures, timeouts, pins, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernbench.commands.collect import collect
from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_FAILED, EXIT_OK, UserError
from kernbench.results import model as results_io

pytestmark = pytest.mark.slow

FACTORY = '''
import os, time
import numpy as np
from kernbench.kernels.base import Kernel

def make(n, mode="ok", device="cpu", **_):
    a = np.random.default_rng().standard_normal((n, n))
    if mode == "raise" and n == 16:
        raise RuntimeError("boom in cell n=16")
    if mode == "hang" and n == 16:
        return lambda: time.sleep(3600)
    if mode == "die" and n == 16:
        os.kill(os.getpid(), 9)
    if mode == "slow":
        return lambda: time.sleep(0.2)
    if mode in ("tuned", "owned"):
        own = {"source_hash": os.environ.get("KB_OWN_HASH", "a" * 16)} if mode == "owned" else {}
        return Kernel(run=lambda: a @ a, configs=[{"k": 1}, {"k": 2}],
                      build=lambda cfg: (lambda: a @ a), info=own)
    return lambda: a @ a
'''


def write_bench(folder: Path, mode: str, rounds: int = 1, timeout: float = 60.0,
                sizes: tuple[int, ...] = (8, 16, 32)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "factory.py").write_text(FACTORY)
    bench = folder / "engine.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: engine-{mode}
        description: engine test
        kernel: factory:make
        axes:
          n: {list(sizes)}
        variants:
          v: {{mode: {mode}}}
        metrics:
          flops: 2*n*n*n
        timer: {{warmup_s: 0.0, budget_s: 0.02, min_samples: 3, cell_timeout_s: {timeout}}}
        rounds: {rounds}
        """))
    return bench


def by_n(results: results_io.Results) -> dict[int, results_io.CellResult]:
    return {cell.params["n"]: cell for cell in results.cells}


def test_a_raising_cell_fails_alone(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "raise")
    code = run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu"))
    assert code == EXIT_FAILED
    cells = by_n(results_io.load(tmp_path / "out" / "results.json"))
    assert cells[16].status == "failed"
    # the reason names where the factory raised; the traceback stays in the round's extra
    assert cells[16].reason == "round 1: RuntimeError: boom in cell n=16 (factory.py:9, in make)"
    assert 'raise RuntimeError("boom in cell n=16")' in cells[16].rounds[0].extra["traceback"]
    assert cells[8].status == "ok" and cells[32].status == "ok"
    assert cells[8].summary is not None and cells[8].summary.n >= 3
    assert cells[8].metrics["flops"] == 2 * 8**3


def test_a_hanging_cell_times_out_and_the_run_goes_on(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "hang", timeout=1.5)
    started = time.monotonic()
    code = run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu"))
    assert time.monotonic() - started < 30
    assert code == EXIT_FAILED
    cells = by_n(results_io.load(tmp_path / "out" / "results.json"))
    assert cells[16].reason == "round 1: timeout: cell ran longer than 1.5 s"
    assert cells[8].status == "ok" and cells[32].status == "ok"


def test_a_worker_killed_by_a_signal_fails_its_cell_only(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "die")
    code = run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu"))
    assert code == EXIT_FAILED
    cells = by_n(results_io.load(tmp_path / "out" / "results.json"))
    assert cells[16].status == "failed"
    assert "signal SIGKILL" in (cells[16].reason or "")
    assert cells[32].status == "ok"


def test_later_rounds_replay_round_one_pins(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "tuned", rounds=3, sizes=(8,))
    assert run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu",
                          save_pins=True)) == EXIT_OK
    cell = results_io.load(tmp_path / "out" / "results.json").cells[0]
    assert [r.pin_action for r in cell.rounds] == ["recorded", "replayed", "replayed"]
    assert len({r.pin for r in cell.rounds}) == 1
    pins = json.loads((tmp_path / "b" / "pins" / "engine-tuned.json").read_text())["pins"]
    (pin,) = pins.values()
    assert {c["config"]["k"] for c in pin["candidates"]} == {1, 2}
    # A second run replays the committed pins file from its first round on.
    assert run(RunRequest(bench=str(bench), out=tmp_path / "out2", device="cpu")) == EXIT_OK
    again = results_io.load(tmp_path / "out2" / "results.json").cells[0]
    assert [r.pin_action for r in again.rounds] == ["replayed"] * 3


def _make_stale(pins_path: Path) -> None:
    data = json.loads(pins_path.read_text())
    for pin in data["pins"].values():
        pin["fingerprint"]["source_hash"] = "0" * 16
    pins_path.write_text(json.dumps(data))


def test_a_stale_pin_is_reported_and_never_reused(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "tuned", sizes=(8,))
    assert run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu",
                          save_pins=True)) == EXIT_OK
    project_pins = tmp_path / "b" / "pins" / "engine-tuned.json"
    # What a resume checks the kernel module by is the hash its pins are fingerprinted with.
    (pin,) = json.loads(project_pins.read_text())["pins"].values()
    started = json.loads((tmp_path / "out" / "run.json").read_text())
    assert started["kernel_source"] == pin["fingerprint"]["source_hash"]
    _make_stale(project_pins)
    assert run(RunRequest(bench=str(bench), out=tmp_path / "out2", device="cpu")) == EXIT_OK
    results = results_io.load(tmp_path / "out2" / "results.json")
    assert results.cells[0].rounds[0].pin_action == "stale-retuned"
    assert "fingerprint changed: source_hash" in results.stale_pins[0]
    # An explicit replay of a stale pins file fails the cell instead of retuning.
    _make_stale(project_pins)
    code = run(RunRequest(bench=str(bench), out=tmp_path / "out3", device="cpu",
                          pins=project_pins))
    assert code == EXIT_FAILED
    cell = results_io.load(tmp_path / "out3" / "results.json").cells[0]
    assert "stale pin (fingerprint changed: source_hash)" in (cell.reason or "")


def test_a_kernel_with_its_own_source_hash_is_fingerprinted_by_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def first_action(out: str) -> str | None:
        assert run(RunRequest(bench=str(bench), out=tmp_path / out, device="cpu")) == EXIT_OK
        return results_io.load(tmp_path / out / "results.json").cells[0].rounds[0].pin_action

    bench = write_bench(tmp_path / "b", "owned", sizes=(8,))
    assert run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu",
                          save_pins=True)) == EXIT_OK
    with (tmp_path / "b" / "factory.py").open("a") as factory:
        factory.write("# an edit beside the kernel, not in what its choice depends on\n")
    assert first_action("out2") == "replayed"
    monkeypatch.setenv("KB_OWN_HASH", "b" * 16)
    assert first_action("out3") == "stale-retuned"
    # A kernel without one is fingerprinted by its factory's file.
    plain = write_bench(tmp_path / "p", "tuned", sizes=(8,))
    assert run(RunRequest(bench=str(plain), out=tmp_path / "p1", device="cpu",
                          save_pins=True)) == EXIT_OK
    with (tmp_path / "p" / "factory.py").open("a") as factory:
        factory.write("# any edit\n")
    bench = plain
    assert first_action("p2") == "stale-retuned"


def test_resume_after_kill_9_does_not_remeasure_finished_cells(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "slow", sizes=(1, 2, 3, 4, 5, 6))
    out = tmp_path / "out"
    code = (
        "import sys; from pathlib import Path; from kernbench.commands.run import run, RunRequest; "
        f"sys.exit(run(RunRequest(bench={str(bench)!r}, out=Path({str(out)!r}), device='cpu')))"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    journal = out / "journal" / "r1"
    deadline = time.monotonic() + 60
    while len(list(journal.glob("0*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    time.sleep(0.5)  # the worker dies with its parent
    finished = {p.name: p.stat().st_mtime_ns for p in journal.glob("0*.json")}
    assert 2 <= len(finished) < 6
    assert run(RunRequest(resume=out)) == EXIT_OK
    after = {p.name: p.stat().st_mtime_ns for p in journal.glob("0*.json")}
    assert len(after) == 6
    assert all(after[name] == mtime for name, mtime in finished.items())
    results = results_io.load(out / "results.json")
    assert results.complete and all(c.status == "ok" for c in results.cells)


def test_resume_refuses_a_bench_changed_in_what_it_measures(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "ok", sizes=(4,))
    run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu"))
    bench.write_text(bench.read_text().replace("budget_s: 0.02", "budget_s: 0.03"))
    with pytest.raises(UserError, match=r"changed since the run started \(timer\); start a"):
        run(RunRequest(resume=tmp_path / "out"))


def test_resume_refuses_a_kernel_whose_module_changed_and_collect_takes_it(
    tmp_path: Path,
) -> None:
    bench = write_bench(tmp_path / "b", "ok", sizes=(4,))
    out = tmp_path / "out"
    assert run(RunRequest(bench=str(bench), out=out, device="cpu")) == EXIT_OK
    module = bench.parent / "factory.py"
    module.write_text(module.read_text() + "\n# a change to the kernel\n")
    with pytest.raises(UserError) as info:
        run(RunRequest(resume=out))
    assert info.value.message == (f"--resume: {module} changed since the run started (the "
                                  "kernel it measures); start a new run, or restore it")
    assert collect(out) == EXIT_OK  # measures nothing: rebuilds what was measured


def test_resume_takes_a_bench_whose_default_rounds_changed(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "ok", rounds=2, sizes=(4,))
    out = tmp_path / "out"
    assert run(RunRequest(bench=str(bench), out=out, device="cpu", rounds=1)) == EXIT_OK
    bench.write_text(bench.read_text().replace("rounds: 2", "rounds: 3"))
    assert run(RunRequest(resume=out)) == EXIT_OK  # the run's rounds are its own: 1
    assert results_io.load(out / "results.json").rounds == 1


def test_a_run_started_before_versions_still_resumes(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "ok", sizes=(4, 8))
    out = tmp_path / "out"
    assert run(RunRequest(bench=str(bench), out=out, device="cpu")) == EXIT_OK
    # Make the folder as an older kernbench left it: no schema_version in run.json or the
    # journal, no figures in run.json; and the run cut short after its first cell.
    manifest = json.loads((out / "run.json").read_text())
    del manifest["schema_version"], manifest["figures"]
    (out / "run.json").write_text(json.dumps(manifest))
    first, second = sorted((out / "journal" / "r1").glob("0*.json"))
    entry = json.loads(first.read_text())
    del entry["schema_version"]
    first.write_text(json.dumps(entry))
    second.unlink()
    (out / "results.json").unlink()
    assert run(RunRequest(resume=out)) == EXIT_OK
    results = results_io.load(out / "results.json")
    assert results.complete and [c.status for c in results.cells] == ["ok", "ok"]
    assert json.loads(second.read_text())["schema_version"] == 1
