"""`kernbench ab` for real: every side a `python -m kernbench run` process, CPU only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernbench.ab.outputs import summarize_ab
from kernbench.ab.run import run_ab
from kernbench.ab.sides import run_subprocess
from kernbench.results.kinds import AB_JSON_NAME

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "ab_fixtures"
SIDE_RUNNER = run_subprocess

pytestmark = pytest.mark.slow


def ab(bench: Path, out: Path, **options):
    messages: list[str] = []
    outcome = run_ab(
        str(bench), out=out, device="cpu", run_side=SIDE_RUNNER, echo=messages.append, **options
    )
    return outcome, messages


def test_a_ten_percent_slowdown_is_slower_in_every_cell_within_two_minutes(tmp_path):
    start = time.monotonic()
    outcome, messages = ab(ROOT / "benches" / "ab-synthetic.yaml", tmp_path / "ab")
    elapsed = time.monotonic() - start
    report = outcome.report
    assert outcome.exit_code == 0
    assert report.rounds == 6 and report.switch == "KB_DEMO_SLOW"
    assert len(report.cells) == 4
    assert [c.verdict for c in report.cells] == ["slower"] * 4, [c.ci_pct for c in report.cells]
    for cell in report.cells:
        assert 5 < cell.delta_pct < 15
    assert not any("appears nowhere" in m for m in messages)  # ab_demo.py reads it
    assert elapsed < 120, f"took {elapsed:.0f} s"


def test_a_switch_nothing_reads_is_never_faster_or_slower_with_an_aa_control(tmp_path):
    outcome, messages = ab(FIXTURES / "ab-null.yaml", tmp_path / "ab", rounds=3, aa=True)
    report = outcome.report
    assert outcome.exit_code == 0
    assert report.aa and len(report.cells) == 2
    assert {c.verdict for c in report.cells} <= {"same", "unstable"}
    assert all(c.aa_floor_pct is not None for c in report.cells)
    assert any("KB_AB_NOBODY appears nowhere" in m for m in messages)


def test_a_variant_failing_in_round_two_is_reported_and_keeps_round_one(tmp_path):
    folder = tmp_path / "ab"
    outcome, _ = ab(FIXTURES / "ab-fail.yaml", folder)
    report = outcome.report
    assert outcome.exit_code == 1
    assert report.failed_variants == {"broken": [2]}
    assert {f.log for f in report.failed_runs} == {"r2_A/log.txt", "r2_B/log.txt"}
    assert all("synthetic failure in round 2" in f.reason for f in report.failed_runs)
    cells = {c.id: c for c in report.cells}
    assert [cells[f"steady/work_us={w}"].verdict for w in (100, 300)] == ["slower"] * 2
    for work in (100, 300):  # round 1 kept, too little for a verdict
        broken = cells[f"broken/work_us={work}"]
        assert (broken.verdict, broken.failed_rounds) == ("unstable", [2])
        assert len(broken.round_deltas_pct) == 1
    for run in ("r1_A", "r1_B", "r2_B", "r2_A"):
        assert (folder / run / "results.json").is_file()
        assert (folder / run / "log.txt").is_file()

    original = (folder / AB_JSON_NAME).read_bytes()
    (folder / AB_JSON_NAME).unlink()
    summarize_ab(folder)
    assert (folder / AB_JSON_NAME).read_bytes() == original
