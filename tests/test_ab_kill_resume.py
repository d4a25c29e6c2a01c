"""kill -9 of a real `kernbench ab` at random moments, each followed by `ab --resume`
(or, killed before its plan was saved, a new `ab` into the same folder), under both
schedules: every round ends with each of its sides measured once, no turn is taken
twice, and nothing a kill left kept (a whole interleaved round, a whole sequential side)
is measured again."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from kernbench.ab.outcomes import turns_path
from kernbench.execute.journal import JOURNAL
from kernbench.results import model as results_io
from kernbench.results.ab import AB_FORMAT, TURNS_FORMAT
from kernbench.results.kinds import AB_JSON_NAME, AB_MANIFEST_NAME, RESULTS_NAME

pytestmark = pytest.mark.slow

KILLS = 10
CELLS = 2
ROUNDS = 3
SIDES = ("A", "B")
# A kill comes at a random moment up to this long after its A/B started: about its
# start-up and one round (interleaved) or one side (sequential) on an idle machine. After
# a kill that left nothing more kept (a busy machine) the window widens, up to
# WIDEST times, so that the kills still reach the later rounds and the summary.
KILL_WINDOW_S = {"interleaved": 3.0, "sequential": 4.0}
WIDEST = 3.0


def write_bench(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "nap.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: nap
        description: short spins, an A/B of a switch nothing reads
        kernel: sleep
        axes: {{work_us: {[10 * (i + 1) for i in range(CELLS)]}}}
        timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3}}
        ab: {{switch: KB_NAP_NOBODY}}
        """))
    return bench


def start(bench: Path, out: Path, schedule: str, log: Path) -> subprocess.Popen[bytes]:
    """`kernbench ab --resume OUT` when OUT holds an A/B's plan, else a new A/B into OUT;
    in a session of its own, so its whole process group can be killed."""
    if (out / AB_MANIFEST_NAME).exists():
        argv = ["--resume", str(out)]
    else:
        argv = ["--bench", str(bench), "--device", "cpu", "--out", str(out),
                "--rounds", str(ROUNDS), "--schedule", schedule]
    with log.open("ab") as handle:
        handle.write(f"$ ab {' '.join(argv)}\n".encode())
        handle.flush()
        return subprocess.Popen([sys.executable, "-m", "kernbench", "ab", *argv],
                                stdout=subprocess.DEVNULL, stderr=handle,
                                start_new_session=True)


def processes_of(out: Path) -> list[int]:
    """Live processes with an argument in the A/B's folder (the A/B, its sides, their
    workers); a zombie has no command line left."""
    found = []
    inside = f"{out}{os.sep}"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(arg == str(out) or arg.startswith(inside) for arg in args):
            found.append(int(proc.name))
    return found


def kill(process: subprocess.Popen[bytes], out: Path, whole_group: bool) -> None:
    """SIGKILL the A/B alone (its children must die with it) or its whole process group
    (as a terminal's kill does); then wait until nothing of it is left."""
    if whole_group:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while processes_of(out) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not processes_of(out), "a side or a worker outlived its killed A/B"


def kept(out: Path, schedule: str) -> dict[Path, bytes]:
    """What a resume keeps, byte for byte: an interleaved round whose turns file was
    written (its last word) with its sides' results and journals; a sequential side whose
    results are whole, with its journal."""
    sides: list[Path] = []
    found: dict[Path, bytes] = {}
    for k in range(1, ROUNDS + 1):
        if schedule == "interleaved":
            if turns_path(out, k).is_file():
                found[turns_path(out, k)] = turns_path(out, k).read_bytes()
                sides += [out / f"r{k}_{side}" for side in SIDES]
        else:
            for side in SIDES:
                results = out / f"r{k}_{side}" / RESULTS_NAME
                if results.is_file() and results_io.load(results).complete:
                    sides.append(results.parent)
    for side in sides:
        for path in [side / RESULTS_NAME, *sorted((side / "journal").glob("r*/*.json"))]:
            found[path] = path.read_bytes()
    return found


def check_unchanged(before: dict[Path, bytes], out: Path, schedule: str, seed: int) -> None:
    now = kept(out, schedule)
    changed = [str(p.relative_to(out)) for p, data in before.items() if now.get(p) != data]
    assert not changed, f"seed {seed}: kept files measured again: {changed}"


def check_finished(out: Path, schedule: str, seed: int) -> None:
    """Every cell judged on all its rounds; each side of each round measured each cell
    once; each interleaved turn taken once."""
    report = AB_FORMAT.read(out / AB_JSON_NAME)
    assert (report.rounds, report.planned_rounds) == (ROUNDS, None), f"seed {seed}"
    assert not report.failed_runs and not report.failed_variants, f"seed {seed}"
    assert len(report.cells) == CELLS, f"seed {seed}"
    for cell in report.cells:
        assert len(cell.round_deltas_pct) == ROUNDS, f"seed {seed}: {cell.id}"
        if schedule == "interleaved":
            assert cell.turns is not None and len(cell.turns) == ROUNDS, f"seed {seed}"
    for k in range(1, ROUNDS + 1):
        for side in SIDES:
            run = out / f"r{k}_{side}"
            entries = sorted((run / "journal").glob("r*/*"))
            assert [p.name for p in entries] == [f"{i:05d}.json" for i in range(CELLS)], (
                f"seed {seed}: {run.name}: {entries}")
            for path in entries:
                entry = JOURNAL.read(path)
                assert (entry.result.round, entry.result.status) == (k, "ok"), f"seed {seed}"
            assert results_io.load(run / RESULTS_NAME).complete, f"seed {seed}: {run.name}"
        if schedule == "interleaved":
            record = TURNS_FORMAT.read(turns_path(out, k))
            assert len(record.cells) == CELLS, f"seed {seed}: round {k}"
            for cell_id, turns in record.cells.items():
                counts = Counter(turns.sides)
                assert turns.reason is None, f"seed {seed}: {cell_id}: {turns.reason}"
                assert counts == {side: turns.turns_per_side for side in SIDES}, (
                    f"seed {seed}: round {k} {cell_id}: {counts}")
                assert len(turns.medians_s) == len(turns.spans_s) == len(turns.sides)
    assert not list(out.rglob("*.damaged")), f"seed {seed}"
    hidden = [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert hidden == [], f"seed {seed}: temporaries a kill left: {hidden}"


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
@pytest.mark.parametrize("schedule", ["interleaved", "sequential"])
def test_kill_9_of_an_ab_at_random_moments_then_resume_measures_each_side_once(
    tmp_path: Path, schedule: str,
) -> None:
    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    bench = write_bench(tmp_path / "b")
    log = tmp_path / "stderr.log"
    runs, kills = 0, 0
    out = tmp_path / f"ab{runs}"
    seen: dict[Path, bytes] = {}
    base = window = KILL_WINDOW_S[schedule]
    process = start(bench, out, schedule, log)
    while kills < KILLS:
        planned = (out / AB_MANIFEST_NAME).exists()
        time.sleep(rng.uniform(0.0, window))
        if process.poll() is None:
            kill(process, out, whole_group=rng.random() < 0.5)
            kills += 1
            check_unchanged(seen, out, schedule, seed)
            now = kept(out, schedule)
            stuck = len(now) == len(seen) and planned == (out / AB_MANIFEST_NAME).exists()
            window = min(window * 1.5, base * WIDEST) if stuck else base
            seen = now
        else:
            assert process.returncode == 0, f"seed {seed}: {log.read_text()}"
            check_unchanged(seen, out, schedule, seed)
            check_finished(out, schedule, seed)
            runs += 1
            out, seen = tmp_path / f"ab{runs}", {}
        process = start(bench, out, schedule, log)
    assert process.wait(timeout=120) == 0, f"seed {seed}: {log.read_text()}"
    check_unchanged(seen, out, schedule, seed)
    check_finished(out, schedule, seed)
    assert "Traceback" not in log.read_text(), f"seed {seed}: {log.read_text()}"
