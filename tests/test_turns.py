"""A round in turns (execute/turns.py): every cell prepared, then visited `turns` times in
order, a share of the budget each; a failing cell journaled at once, the rest at the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import invoke, nap_bench

from kernbench.execute.turns import TurnsHooks, merged, run_in_turns
from kernbench.kernels.base import Kernel
from kernbench.plan import Cell
from kernbench.results.model import RoundResult
from kernbench.spec.timer_model import TimerSpec, turn_spec
from kernbench.timing.base import Measurement


def test_a_turn_gets_its_share_of_the_timer() -> None:
    spec = TimerSpec(budget_s=0.3, min_time_s=0.2, warmup_s=0.06, settle_s=0.3, min_samples=10,
                     max_samples=1000, turns=3)
    share = turn_spec(spec, 3)
    assert share.budget_s == pytest.approx(0.1) and share.min_time_s == pytest.approx(0.2 / 3)
    assert share.warmup_s == pytest.approx(0.02) and share.settle_s == pytest.approx(0.1)
    assert share.settle_min_s == spec.settle_min_s  # the boost window is not shared out
    assert (share.min_samples, share.max_samples) == (4, 333)
    assert turn_spec(TimerSpec(min_samples=3), 10).min_samples == 3  # the stop rule's floor


def _measured(samples: list[float], blocks: int = 1, settled: bool = True) -> Measurement:
    settle_blocks = [2 * samples[0]] * (2 if settled else 3)  # a settle's block medians
    return Measurement(
        timer="event", samples_s=samples, warmup_calls=2, stop_reason="converged",
        duty="sustained", settle={"settled": settled, "seconds": 0.01, "calls": 5,
                                  "block_medians_s": settle_blocks,
                                  "block_clocks_mhz": [1980.0] * len(settle_blocks)},
        blocks=[{"samples": len(samples), "median_s": samples[0]}] * blocks,
        extra={"l2": "cold"},
    )


def test_turns_merge_in_the_order_taken() -> None:
    whole = merged([_measured([1.0, 1.1]), _measured([2.0], blocks=2, settled=False)])
    assert whole.samples_s == [1.0, 1.1, 2.0] and whole.warmup_calls == 4
    assert whole.extra == {"l2": "cold", "turns": 2, "turn_samples": [2, 1]}
    assert [b["turn"] for b in whole.blocks] == [0, 1, 1]
    assert whole.settle is not None
    assert (whole.settle["settled"], whole.settle["turns_settled"]) == (False, 1)
    assert whole.settle["calls"] == 10
    # Each turn's settle blocks, in order, not the first turn's alone.
    assert whole.settle["block_medians_s"] == [2.0, 2.0, 4.0, 4.0, 4.0]
    assert whole.settle["turn_settle_blocks"] == [2, 3]
    assert len(whole.settle["block_clocks_mhz"]) == 5


def test_cells_are_visited_in_turns_and_a_failing_one_is_journaled_at_once() -> None:
    cells = [Cell(variant="v", axes={"i": i}, params={"i": i}, index=i) for i in range(3)]
    visits: list[tuple[str, int]] = []
    journaled: list[tuple[int, str]] = []

    def prepare(cell: Cell):
        result = RoundResult(round=1, status="ok")
        if cell.index == 2:
            result.status = "failed"
            return None, result
        return Kernel(run=lambda: None, info={"i": cell.index}), result

    def measure(kernel: Kernel, spec: TimerSpec) -> Measurement:
        visits.append(("measure", kernel.info["i"]))
        if visits.count(("measure", 1)) == 2 and kernel.info["i"] == 1:
            raise RuntimeError("lost the device")
        return _measured([spec.budget_s])

    def finish(visit, measured, error) -> None:
        visit.result.status = "failed" if error else "ok"
        visit.result.samples_s = measured.samples_s if measured else []

    hooks = TurnsHooks(prepare, measure, finish,
                       journal=lambda cell, result: journaled.append((cell.index, result.status)),
                       current=lambda cell: visits.append(("current", cell.index)))
    run_in_turns(cells, TimerSpec(budget_s=0.3, turns=3), hooks)
    measured = [i for what, i in visits if what == "measure"]
    assert measured == [0, 1, 0, 1, 0]  # cell 1 failed in its second turn
    assert journaled == [(2, "failed"), (1, "failed"), (0, "ok")]


@pytest.mark.slow
def test_a_bench_in_turns_runs_and_records_its_turns(tmp_path: Path) -> None:
    bench = nap_bench(tmp_path / "b", work_us=(5, 10))
    text = bench.read_text().replace("min_samples: 3}", "min_samples: 3, turns: 3}")
    bench.write_text(text)
    out = tmp_path / "out"
    code, _, err = invoke("run", "--bench", str(bench), "--device", "cpu", "--rounds", "2",
                          "--no-figures", "--out", str(out))
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    for cell in data["cells"]:
        assert cell["status"] == "ok"
        for round_ in cell["rounds"]:
            assert round_["extra"]["turns"] == 3
            assert len(round_["extra"]["turn_samples"]) == 3
            assert sum(round_["extra"]["turn_samples"]) == len(round_["samples_s"])
