"""The interleaved schedule end to end on the CPU: live side processes taking turns."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kernbench.ab.outcomes import turns_path
from kernbench.ab.run import choose_schedule, run_ab
from kernbench.plan import Cell
from kernbench.results.ab import AB_FORMAT, TURNS_FORMAT

pytestmark = pytest.mark.slow

KERNEL = '''\
import os
import signal
import time

from kernbench.kernels.synthetic import spin


def make(work_us=200.0, mode="ok", **_):
    side = os.environ.get("KERNBENCH_SIDE")
    if mode == "die" and side == "B":
        os._exit(3)
    if mode == "kill" and side == "B":
        os.kill(os.getpid(), signal.SIGKILL)
    hang = mode == "hang" and side == "B"
    seconds = work_us * 1e-6 * (1.10 if os.environ.get("KB_T") == "1" else 1.0)

    def run():
        if hang:
            time.sleep(3600)
        spin(seconds)

    return run
'''


def write_bench(folder: Path, variants: str, timeout_s: float = 60.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns_kernel.py").write_text(KERNEL)
    bench = folder / "turns.yaml"
    bench.write_text(
        "name: turns\ndescription: interleaved test\nkernel: turns_kernel:make\n"
        "axes:\n  work_us: [200]\n"
        f"variants:\n{variants}"
        "timer: {warmup_s: 0.01, budget_s: 0.05, min_samples: 3, "
        f"cell_timeout_s: {timeout_s}}}\n"
        "ab: {switch: KB_T, rounds: 2}\n"
    )
    return bench


def test_sides_take_turns_one_at_a_time_and_record_every_turn(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "  plain: {mode: ok}\n")
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu", aa=True,
                     echo=lambda line: None)
    assert outcome.exit_code == 0
    report = AB_FORMAT.read(tmp_path / "ab" / "ab.json")
    assert report.schedule == "interleaved"
    (cell,) = report.cells
    assert cell.verdict == "slower" and 5 < cell.delta_pct < 15
    assert cell.aa_floor_pct is not None and cell.aa_floor_pct < 5
    assert cell.aa_p is None  # two rounds: the A/A rank test cannot decide, so is not asked
    assert cell.turns is not None and len(cell.turns) == 2
    for round_ in (1, 2):
        record = TURNS_FORMAT.read(turns_path(tmp_path / "ab", round_))
        turns = record.cells[cell.id]
        assert sorted(set(turns.sides)) == ["A", "AA1", "B"]
        assert len(turns.medians_s) == 3 * turns.turns_per_side
        spans = turns.spans_s
        assert all(start < end for start, end in spans)
        assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
        for side in ("A", "B", "AA1"):
            assert turns.sides.count(side) == turns.turns_per_side
    # every side's folder is a run of its own: results, status, log
    side_b = json.loads((tmp_path / "ab" / "r1_B" / "results.json").read_text())
    assert side_b["cells"][0]["rounds"][0]["stop_reason"] == "turns"


def test_a_side_that_dies_fails_its_variant_and_a_fresh_one_takes_the_rest(
    tmp_path: Path,
) -> None:
    bench = write_bench(tmp_path / "b", "  dies: {mode: die}\n  killed: {mode: kill}\n"
                        "  plain: {mode: ok}\n")
    lines: list[str] = []
    start = time.monotonic()
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu", echo=lines.append)
    assert time.monotonic() - start < 60
    assert outcome.exit_code == 1
    report = outcome.report
    assert report.failed_variants == {"dies": [1, 2], "killed": [1, 2]}
    assert [c.variant for c in report.cells] == ["plain"]
    reasons = " ".join(f.reason for f in report.failed_runs)
    assert "exited with exit code 3" in reasons
    assert "exited with signal SIGKILL" in reasons  # as `run` names a signal
    assert any("starting it again" in line for line in lines)


def test_a_side_that_hangs_is_killed_at_the_cell_timeout(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "b", "  hangs: {mode: hang}\n  plain: {mode: ok}\n",
                        timeout_s=3.0)
    start = time.monotonic()
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu", rounds=2,
                     echo=lambda line: None)
    assert time.monotonic() - start < 60
    assert outcome.report.failed_variants == {"hangs": [1, 2]}
    assert "no answer within 3 s" in " ".join(f.reason for f in outcome.report.failed_runs)
    assert [c.verdict for c in outcome.report.cells] == ["slower"]


def test_cells_of_several_ranks_fall_back_to_sequential_with_a_reason() -> None:
    cells = [Cell("v", {"world_size": 2}, {"world_size": 2})]
    chosen, note = choose_schedule("interleaved", cells)
    assert chosen == "sequential" and note is not None and "world_size" in note
    assert choose_schedule("interleaved", [Cell("v", {}, {})]) == ("interleaved", None)
    assert choose_schedule("sequential", [Cell("v", {}, {})]) == ("sequential", None)


def test_the_start_order_rotates_by_round_with_round_one_a_first() -> None:
    from kernbench.ab.schedule import interleaved_schedule, start_order

    runs = interleaved_schedule(4, "0", "1", aa=True)
    orders = [[r.side for r in start_order([r for r in runs if r.round == k])]
              for k in range(1, 5)]
    assert orders == [["A", "B", "AA1"], ["B", "AA1", "A"], ["AA1", "A", "B"],
                      ["A", "B", "AA1"]]
    assert runs[0].pins_mode == "auto" and {r.pins_mode for r in runs[1:]} == {"replay"}
