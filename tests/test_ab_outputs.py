from __future__ import annotations

from ab_fixtures.build import manifest, outcomes

from kernbench.ab.analysis import analyze
from kernbench.ab.outputs import closing_lines, failure_lines, opening_line, verdict_table
from kernbench.results.ab import FailedRun


def b_fails_one_cell(run: str, variant: str, size: int) -> float | None:
    """B 10% slower everywhere, and failing slow/size=400 in every round."""
    if run.endswith("_B") and (variant, size) == ("slow", 400):
        return None
    return size * 1e-6 * (1.1 if run.endswith("_B") else 1.0)


def test_ab_closes_with_its_verdicts_and_the_cells_left_without_one():
    plan = manifest(rounds=2)
    report = analyze(plan, outcomes(plan, b_fails_one_cell))
    assert report.summary.unjudged_cells == ["slow/size=400"]
    lines = closing_lines(report)
    assert lines[:3] == [
        "verdicts: faster 0, slower 3, same 0, unstable 0 (of 3 cells); false faster/slower "
        "calls to expect with no effect at all: at most 1.50",
        "note: with 2 rounds no order-statistic pair covers the median with 95%; each "
        "interval is the min-max, coverage 50.0%",
        "no verdict (no round measured by every side): slow/size=400",
    ]
    assert lines[3].startswith("failed: slow in rounds 1, 2, 2 failures, e.g. r1_B: ")


def test_a_failure_is_shown_by_the_side_that_failed_not_by_those_it_left_untimed():
    plan = manifest(rounds=2)
    report = analyze(plan, outcomes(plan, b_fails_one_cell))
    untimed, own = (
        FailedRun(variant="slow", round=1, run=run, log=f"{run}/log.txt",
                  reason=f"slow/size=400: failed: round 1: {why}")
        for run, why in (("r1_A", "not timed: side B could not prepare the cell: boom"),
                         ("r1_B", "RuntimeError: boom"))
    )
    report = report.model_copy(update={"failed_runs": [untimed, own],
                                       "failed_variants": {"slow": [1]}})
    assert failure_lines(report) == [
        "failed: slow in round 1, 2 failures, e.g. r1_B: slow/size=400: failed: round 1: "
        "RuntimeError: boom; its cells are judged without those rounds"
    ]


def test_ab_prints_a_row_per_cell_before_its_closing_lines():
    # The terminal said "slower 3" and named no cell, interval or threshold.
    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, lambda run, variant, size: size * 1e-6 * (
        1.1 if run.endswith("_B") else 1.0)))
    assert verdict_table(report) == [
        "cell           verdict     delta            interval  coverage  threshold",
        "fast/size=100  slower   +10.00 %  [+10.00, +10.00] %    96.9 %    ±1.00 %",
        "fast/size=400  slower   +10.00 %  [+10.00, +10.00] %    96.9 %    ±1.00 %",
        "slow/size=100  slower   +10.00 %  [+10.00, +10.00] %    96.9 %    ±1.00 %",
        "slow/size=400  slower   +10.00 %  [+10.00, +10.00] %    96.9 %    ±1.00 %",
    ]


def test_over_twenty_cells_the_table_shows_those_not_same_first_and_counts_the_rest():
    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, lambda run, variant, size: size * 1e-6))
    same, = report.cells[:1]
    cells = [same.model_copy(update={"id": f"c{i}", "verdict": "same"}) for i in range(24)]
    cells[22] = cells[22].model_copy(update={"verdict": "unstable"})
    lines = verdict_table(report.model_copy(update={"cells": cells}))
    assert len(lines) == 1 + 20 + 1
    assert lines[1].split()[:2] == ["c22", "unstable"]
    assert lines[-1] == "... 4 more cells in report.md (same 4)"


def test_ab_opens_with_its_sides_cells_rounds_schedule_and_threshold():
    # It opened with "schedule: interleaved" alone.
    plan = manifest(rounds=6, aa=True, min_effect=0.5).model_copy(update={
        "max_rounds": 12, "schedule": "interleaved", "a": None})
    assert opening_line(plan, 4) == (
        "A/B of KB_X on fake: A KB_X unset, B KB_X=1; 4 cells, 6 rounds (auto: up to 12), "
        "schedule interleaved, minimum effect 0.5 %, A/A control on")
    plan = manifest(rounds=2).model_copy(update={"schedule_note": "a cell needs 2 ranks"})
    assert opening_line(plan, 1) == (
        "A/B of KB_X on fake: A KB_X=0, B KB_X=1; 1 cell, 2 rounds, schedule sequential "
        "(a cell needs 2 ranks), minimum effect 1 %")
