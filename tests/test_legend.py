"""The report says what its columns and flags mean, once, for those that appear."""

from __future__ import annotations

from pathlib import Path

from kernbench.render.legend import legend
from kernbench.render.report import write_report
from kernbench.results import model as results_io

DATA = Path(__file__).resolve().parents[1] / "benches" / "data"


def _starts(lines: list[str]) -> list[str]:
    return [line.split(":")[0] for line in lines]


def test_each_flag_the_tables_show_is_explained_and_no_other():
    norm = legend(results_io.load(DATA / "ops-norm-h200/results.json.xz"))
    assert _starts(norm) == ["median", "GB/s", "timer", "settled", "unsteady", "throttled N%"]
    assert "steady_tol of 3%" in norm[4]
    ccl = legend(results_io.load(DATA / "milestone-1h-ccl.json"))
    assert _starts(ccl) == ["median", "busbw GB/s"]


def test_a_rate_column_says_what_the_bench_counts_per_call():
    # 4303 GB/s of a norm means little until one knows it counts a read and a write once.
    norm = legend(results_io.load(DATA / "ops-norm-h200/results.json.xz"))
    assert norm[1] == ("GB/s: the bench's bytes per call (2*rows*hidden*itemsize) over the "
                       "median, 1 GB = 10⁹ bytes")
    gemm = legend(results_io.load(DATA / "milestone-1h-gemm.json.xz"))
    assert gemm[1].startswith("TFLOP/s: the bench's flops per call (2*M*N*K) over the median")


def test_both_pages_carry_the_legend_and_util_is_a_percentage(tmp_path):
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    write_report(results, tmp_path)
    md, html = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    for text in (md, html):
        assert "under-tile: a dimension smaller than the kernel" in text
        assert "throttled N%: the share of the cell" in text
    assert "| TFLOP/s | GB/s | % of dtype peak | flags |" in md
    (row,) = [line for line in md.splitlines()
              if line.startswith("| resident/shape=256x256x256,dtype=bf16 |")]
    assert "| 1.39 |" in row  # util 0.01391, as a percentage


def test_a_run_whose_cells_auto_timed_differently_names_each_cells_timer(tmp_path):
    # ops-norm's small cells were graph-timed, its larger ones event-timed: one line of a
    # figure, two kinds of time (with and without the launch gap); the rows say which.
    results = results_io.load(DATA / "ops-norm-h200/results.json.xz")
    write_report(results, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "| round medians | timer | settled | GB/s | flags |" in md
    (small,) = [line for line in md.splitlines()
                if line.startswith("| eager/op=softmax,rows=1024,hidden=1024,dtype=bf16 |")]
    (large,) = [line for line in md.splitlines()
                if line.startswith("| eager/op=softmax,rows=16384,hidden=16384,dtype=bf16 |")]
    assert "| graph |" in small and "| event |" in large
    assert "- timer: what timed the cell" in md and "event: CUDA events" in md
    assert "<th>timer</th>" in (tmp_path / "report.html").read_text()
    gemm = tmp_path / "gemm"
    gemm.mkdir()
    write_report(results_io.load(DATA / "milestone-1h-gemm.json.xz"), gemm)
    assert "| timer |" in (gemm / "report.md").read_text()  # cupti and event


def test_the_median_line_says_which_time_it_is_and_which_compare_uses():
    # The report's median pools every sample; compare's is the median of round medians:
    # a cell of rounds 248, 251 and 527 µs reads differently in the two without a word.
    results = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    (line,) = [line for line in legend(results) if line.startswith("median:")]
    assert "every round's samples pooled" in line
    assert "compare's BASE and NEW times are the median of the round medians" in line


def test_a_rated_count_is_explained_with_its_unit():
    # `elements` and `M elements/s` columns appeared with no line saying what they count.
    results = results_io.load(DATA / "ops-norm-h200" / "results.json.xz")
    spec = {**results.spec, "metrics": {**results.spec["metrics"], "elements": "rows*hidden"},
            "rates": ["elements"]}
    cells = [c.model_copy(update={"metrics": {**c.metrics, "elements": 4.0,
                                              "elements_per_s": 4e6}})
             for c in results.cells]
    lines = legend(results.model_copy(update={"spec": spec, "cells": cells}))
    (line,) = [line for line in lines if line.startswith("elements/s:")]
    assert "the bench's elements per call (rows*hidden, in elements" in line
    assert "M elements/s = 10⁶ elements/s" in line
    assert not [line for line in legend(results) if line.startswith("elements/s")]
