"""`report.md` and `report.html` of a run: what ran, a table per variant, flags, figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernbench.render.report import report_results, write_report
from kernbench.results import model as results_io

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benches" / "data"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["milestone-1h-gemm.json.xz", "milestone-1h-ccl.json"])
def test_the_committed_h200_data_gets_both_pages_with_every_figure_embedded(name, tmp_path):
    results = results_io.load(DATA / name)
    md, html = report_results(results, tmp_path)
    figures = sorted(p.stem for p in (tmp_path / "figures").glob("*.png"))
    assert figures == sorted(results.spec["figures"])
    text, page = md.read_text(), html.read_text()
    assert f"# {results.bench}: {len(results.cells)} cells on NVIDIA H200" in text
    for figure in figures:
        assert f"![{figure}](figures/{figure}.png)" in text
    assert page.count('src="data:image/png;base64,') == len(figures)
    # self-contained: nothing fetched (a link within the page is not)
    assert not re.search(r'(src|href)="(?!data:|#)', page)
    assert page.count("<tr class=") == len(results.cells)


def test_flags_and_failures_are_shown(tmp_path):
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    cells = list(results.cells)
    cells[0] = cells[0].model_copy(update={"status": "failed", "reason": "boom: out of memory",
                                           "summary": None})
    (md,) = [p for p in write_report(results.model_copy(update={"cells": cells}), tmp_path)
             if p.suffix == ".md"]
    text = md.read_text()
    assert "| boom: out of memory |" in text
    assert "under-tile" in text
    assert "1 failed" in text


def test_the_rounds_column_shows_how_far_the_round_medians_lie_apart(tmp_path):
    # The interval is of the samples pooled over rounds: on its own it would hide rounds
    # of 248, 251 and 527 µs.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    cell = results.cells[0]
    summary = cell.summary.model_copy(update={"round_medians_s": [248e-6, 251e-6, 527e-6]})
    cells = [cell.model_copy(update={"summary": summary}), *results.cells[1:]]
    text = _markdown(results.model_copy(update={"cells": cells}), tmp_path)
    assert "| 95% CI of the median | round medians |" in text
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {cell.id} |")]
    assert "| 3: 248 µs to 527 µs |" in row


def _markdown(results, folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    return next(p for p in write_report(results, folder) if p.suffix == ".md").read_text()


def test_the_timer_line_names_the_duty_the_rounds_recorded(tmp_path):
    isolated = _markdown(results_io.load(DATA / "milestone-1h-gemm.json.xz"), tmp_path / "i")
    assert "; isolated duty (an idle gap before each sample)" in isolated
    assert "| settled |" not in isolated  # isolated samples do not settle
    before = _markdown(results_io.load(DATA / "ab-schedules-h200" / "tf32-sequential-run1" /
                                       "r1_A" / "results.json.xz"), tmp_path / "b")
    assert "; duty not recorded (measured before kernbench recorded it)" in before
    cpu = _markdown(results_io.load(DATA / "ab-schedules-cpu" / "ab-drift-interleaved" /
                                    "r1_A" / "results.json.xz"), tmp_path / "c")
    assert "duty" not in cpu
    ccl = _markdown(results_io.load(DATA / "milestone-1h-ccl.json"), tmp_path / "n")
    assert "; sustained duty (back to back, no settle phase recorded)" in ccl


def test_the_timer_line_says_l2_only_on_a_gpu_and_names_the_timer_auto_picked(tmp_path):
    # The CPU timer loops over warm caches: "L2 cold" there said what did not happen.
    cpu = _markdown(results_io.load(DATA / "ab-schedules-cpu" / "ab-drift-interleaved" /
                                    "r1_A" / "results.json.xz"), tmp_path / "c")
    (line,) = [line for line in cpu.splitlines() if line.startswith("- Timer:")]
    assert line.startswith("- Timer: auto timer (cpu), warm-up")
    assert "L2" not in line
    gpu = _markdown(results_io.load(DATA / "milestone-1h-gemm.json.xz"), tmp_path / "g")
    assert "- Timer: auto timer (cupti, event), L2 cold," in gpu


def test_the_header_says_whether_the_outputs_were_checked_and_the_worst_error(tmp_path):
    # A table of times said nothing of correctness: a kernel engineer could not tell a
    # checked kernel from a plain callable timed unchecked.
    gemm = _markdown(results_io.load(DATA / "milestone-1h-gemm.json.xz"), tmp_path / "g")
    (line,) = [line for line in gemm.splitlines() if line.startswith("- Checked:")]
    assert re.fullmatch(r"- Checked: 153 of 153 cells against a reference, 153 passed; "
                        r"the largest relative error \S+ \(tolerance \S+\)", line)
    sleep = _markdown(results_io.load(DATA / "ab-schedules-cpu" / "ab-drift-interleaved" /
                                      "r1_A" / "results.json.xz"), tmp_path / "s")
    assert ("- Checked: no cell (the kernel has no check: its output was never compared)"
            in sleep)


def test_sustained_cells_show_how_many_of_their_settle_phases_settled(tmp_path):
    results = results_io.load(REPO / "docs" / "steady" / "floor-sweep.json.xz")
    cell = results.cells[0]
    in_turns = {"settled": False, "seconds": 0.6, "calls": 90, "turns_settled": 3,
                "turn_settle_blocks": [3, 3, 5, 4]}
    alone = {"settled": True, "seconds": 0.2, "calls": 30}
    rounds = [r.model_copy(update={"settle": settle})
              for r, settle in zip(cell.rounds, (in_turns, alone, None), strict=True)]
    cells = [cell.model_copy(update={"rounds": rounds}), *results.cells[1:]]
    text = _markdown(results.model_copy(update={"cells": cells}), tmp_path)
    # the span of the recorded phases, a turn's the mean of its round's (0.6 s / 4 turns)
    assert "sustained duty (back to back, after settle phases of 150 ms to 200 ms a turn, " \
           "to ±1%)" in text
    assert "| round medians | timer | settled |" in text  # its cells: graph and event
    assert f"| {cell.id} | ok |" in text
    row = next(line for line in text.splitlines() if line.startswith(f"| {cell.id} |"))
    assert row.split(" | ")[6] == "4/5"  # 3 of the 4 turns, and the round that settled


def test_an_ab_folder_gets_the_html_twin_of_its_report(tmp_path):
    import shutil

    from kernbench.ab.outputs import summarize_ab

    folder = tmp_path / "ab"
    shutil.copytree(DATA / "ab-schedules-h200" / "known-interleaved-5ms", folder)
    report = summarize_ab(folder)
    page = (folder / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 1
    assert page.count("<tr class=") == len(report.cells) == 8
    assert "schedule <b>interleaved</b>" in page


def test_a_metric_the_bench_declares_gets_its_own_column(tmp_path):
    # Beyond the model's flops and bytes: an arithmetic intensity the user wants to read.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    spec = {**results.spec, "metrics": {**results.spec["metrics"], "ai": "flops / bytes"}}
    cells = [c.model_copy(update={"metrics": {**c.metrics, "ai": 123.4}})
             for c in results.cells]
    text = _markdown(results.model_copy(update={"spec": spec, "cells": cells}), tmp_path)
    # the computed rates with their units; the bench's own metric by its name
    assert "| TFLOP/s | GB/s | % of dtype peak | ai | flags |" in text
    assert "| 123.4 |" in text
    plain = _markdown(results, tmp_path / "plain")
    assert "| ai |" not in plain and "| flops |" not in plain


def test_a_reason_with_pipes_stays_one_table_cell_and_pending_cells_are_not_failed(tmp_path):
    # A dead worker's reason joins its last log lines with " | ".
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    failed, pending, *rest = results.cells
    cells = [
        failed.model_copy(update={"status": "failed", "summary": None,
                                  "reason": "worker died: a | b\nc"}),
        pending.model_copy(update={"status": "pending", "reason": "2 of 3 rounds measured"}),
        *rest,
    ]
    text = _markdown(results.model_copy(update={"cells": cells}), tmp_path)
    assert f"| {failed.id} | worker died: a \\| b c |" in text
    failures = text.split("## Failed cells")[1].split("## Cells not finished")[0]
    assert pending.id not in failures
    assert f"| {pending.id} | 2 of 3 rounds measured |" in text.split("## Cells not finished")[1]


@pytest.mark.parametrize(("git", "label"), [
    ({"commit": "HEAD", "dirty": False}, "kernbench 0.1.0, no git commit"),  # git failed
    ({"commit": "aee041d60de5592a21dac19c10231718304e4ed7", "dirty": True},
     "kernbench 0.1.0 @ aee041d60d (dirty)"),
])
def test_both_pages_name_the_code_as_the_figure_footer_does(tmp_path, git, label):
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    results = results.model_copy(update={"provenance": {**results.provenance,
                                                        "kernbench": "0.1.0", "git": git}})
    for page in write_report(results, tmp_path):
        text = page.read_text()
        assert f"{label}; python" in text, page.name
        assert "HEAD" not in text


def test_the_interval_column_names_what_it_is_and_a_short_coverage(tmp_path):
    # ci_low_s/ci_high_s bound the median (order statistics), not 95% of the samples; with
    # too few samples no pair reaches 95%, and the row says how far it got.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    few = results.cells[0].summary.model_copy(update={"ci_coverage": 0.75})
    cells = [results.cells[0].model_copy(update={"summary": few}), *results.cells[1:]]
    md, html = write_report(results.model_copy(update={"cells": cells}), tmp_path)
    text, page = md.read_text(), html.read_text()
    assert "interval of the samples" not in text + page
    assert "<th>95% CI of the median</th>" in page
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {cells[0].id} |")]
    assert "(75% coverage) |" in row
    assert "(96% coverage)" not in text and "coverage)" not in text.replace(row, "")


def test_the_html_page_names_each_variant_in_code_not_in_markdown_backticks(tmp_path):
    _, html = write_report(results_io.load(DATA / "milestone-1h-gemm.json.xz"), tmp_path)
    page = html.read_text()
    assert '<h2 id="variant-resident">Variant <code>resident</code></h2>' in page
    assert "`" not in "".join(re.findall(r"<h2.*?</h2>", page))


def test_the_figures_come_in_the_order_the_bench_names_them(tmp_path):
    # Sorted by name, the stage breakdown led and throughput came third.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    figures = tmp_path / "figures"
    figures.mkdir()
    for name in ("stage_breakdown", "theory_vs_measured", "throughput", "utilization",
                 "extra"):
        (figures / f"{name}.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    text = _markdown(results, tmp_path)
    shown = re.findall(r"^!\[(\w+)\]", text, flags=re.MULTILINE)
    assert shown == [*results.spec["figures"], "extra"]
    assert results.spec["figures"][0] == "throughput"


def test_the_interval_column_names_the_confidence_the_coverage_is_judged_by(
    tmp_path, monkeypatch
):
    # The header said 95% in both templates while the rows' coverage note compared to
    # CONFIDENCE: one value, read in one place.
    from kernbench.render import report

    monkeypatch.setattr(report, "CONFIDENCE", 0.9)
    md, html = write_report(results_io.load(DATA / "milestone-1h-gemm.json.xz"), tmp_path)
    assert "| 90% CI of the median |" in md.read_text()
    assert "<th>90% CI of the median</th>" in html.read_text()


def test_absent_sections_leave_no_run_of_empty_lines(tmp_path):
    # Seven empty lines ended the committed gemm report.md, where its unresolved, failed
    # and pending sections would have been.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    for page in write_report(results, tmp_path):
        assert "\n\n\n" not in page.read_text()


def test_a_run_whose_every_cell_failed_before_its_check_does_not_say_the_kernel_has_none(
    tmp_path,
):
    gemm = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    failed = [c.model_copy(update={"status": "failed", "rounds": [], "summary": None,
                                   "reason": "CUDA out of memory"}) for c in gemm.cells]
    failed[-1] = failed[-1].model_copy(update={"status": "pending", "reason": None})
    text = _markdown(gemm.model_copy(update={"cells": failed}), tmp_path)
    (line,) = [line for line in text.splitlines() if line.startswith("- Checked:")]
    assert line == f"- Checked: no cell reached its check ({len(failed) - 1} failed before it, " \
        "1 pending)"


def test_an_unsteady_cells_interval_spans_its_rounds_and_is_not_called_a_ci(tmp_path):
    # Rounds of 248, 251 and 527 µs pooled into a CI of [249, 252] µs: the page gave a
    # bound tighter than the rounds' own disagreement.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    cell = results.cells[0]
    summary = cell.summary.model_copy(update={
        "median_s": 250e-6, "ci_low_s": 249e-6, "ci_high_s": 252e-6, "ci_coverage": 0.96,
        "round_medians_s": [248e-6, 251e-6, 527e-6]})
    steady = results.cells[1]
    cells = [cell.model_copy(update={"summary": summary, "unsteady": True,
                                     "round_spread": 527 / 248 - 1}),
             steady.model_copy(update={"unsteady": False}), *results.cells[2:]]
    text = _markdown(results.model_copy(update={"cells": cells}), tmp_path)
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {cell.id} |")]
    assert "| [248 µs, 527 µs] (spans the rounds, not a CI) |" in row
    (other,) = [line for line in text.splitlines() if line.startswith(f"| {steady.id} |")]
    assert "not a CI" not in other
    assert "spans the round medians and the pooled CI" in text


def test_a_report_draws_the_figures_a_killed_drawing_left_out(tmp_path):
    """A report (or run) killed as it drew the figures leaves figures/ with some of them:
    the next report draws the missing ones, not none, and keeps those drawn."""
    results = results_io.load(DATA / "milestone-1h-ccl.json")
    drawn, missing = results.spec["figures"]
    figures = tmp_path / "figures"
    figures.mkdir()
    kept = b"\x89PNG\r\n\x1a\n drawn before the kill"
    (figures / f"{drawn}.png").write_bytes(kept)
    md, _ = report_results(results, tmp_path)
    assert (figures / f"{drawn}.png").read_bytes() == kept
    assert (figures / f"{missing}.png").read_bytes().startswith(b"\x89PNG")
    assert f"![{missing}](figures/{missing}.png)" in md.read_text()
