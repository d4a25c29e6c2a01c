"""A cell whose median its samples do not resolve (`unresolved`): decided once, when the
results are built (analyze.stats.unresolved), migrated into older files, said by the report,
the figures and the export, and never shown as a negative time."""

from __future__ import annotations

import csv
import html
import io
import json
import lzma
from pathlib import Path
from typing import Any

import pytest
from test_render_generic import copy_results

from kernbench.analyze import stats
from kernbench.plan import Cell
from kernbench.render import figure_data
from kernbench.render.export import to_bench, to_csv
from kernbench.render.generic_draw import draw
from kernbench.render.report import write_report
from kernbench.render.unresolved import COLOR, HATCH, LABEL
from kernbench.results import model as results_io
from kernbench.results.build import cell_result
from kernbench.results.model import RoundResult
from kernbench.spec.models import Bench

REPO = Path(__file__).resolve().parents[1]
TOPK = REPO / "benches" / "data" / "ops-moe-h200" / "run-topk" / "results.json.xz"
# A graph timer's cold-L2 samples of a 3 µs kernel whose flush graph jitters by more: each
# a replay less a flush-only replay, two of them below zero (as the committed top-k's).
DIFFERENCES = [-1.1e-6, -0.4e-6, 0.9e-6, 2.1e-6, 2.6e-6, 2.9e-6, 3.7e-6, 5.2e-6, 7.4e-6, 8.5e-6]
STEADY = [2.70e-6, 2.72e-6, 2.71e-6, 2.69e-6, 2.73e-6, 2.70e-6, 2.72e-6, 2.71e-6, 2.70e-6,
          2.71e-6]


@pytest.mark.parametrize(("median", "low", "high", "flag"), [
    (2.7e-6, 2.6e-6, 2.8e-6, False),
    (2.7e-6, -1.1e-6, 8.5e-6, True),  # reaches below zero
    (2.7e-6, 1.35e-6, 3e-6, True),  # down to half the median
    (2.7e-6, 2.6e-6, 5.4e-6, True),  # up to twice it: a host that stalls some calls
    (-0.2e-6, -1e-6, 0.5e-6, True),  # no time at all
])
def test_a_median_is_unresolved_when_its_interval_is_not_within_a_factor_of_two(
    median: float, low: float, high: float, flag: bool
) -> None:
    assert stats.unresolved(median, low, high) is flag


def _built(samples: list[float]):
    bench = Bench.model_validate({"name": "b", "description": "d", "kernel": "sleep",
                                  "axes": {"work_us": [1]}})
    cell = Cell(index=0, variant="v", axes={"i": 0}, params={"i": 0})
    rounds = [RoundResult(round=1, status="ok", timer="graph", samples_s=samples,
                          median_s=sorted(samples)[len(samples) // 2])]
    return cell_result(bench, cell, rounds, 1, None)


def test_a_cell_with_negative_samples_is_flagged_when_its_results_are_built() -> None:
    noisy = _built(DIFFERENCES)
    assert noisy.summary is not None and noisy.summary.ci_low_s < 0
    assert noisy.unresolved and noisy.status == "ok"
    assert not _built(STEADY).unresolved


def test_an_older_file_is_flagged_as_it_loads(tmp_path: Path) -> None:
    # The committed top-k (version 4) holds the cell whose interval reaches -1.1 µs.
    data = json.loads(lzma.open(TOPK, "rt").read())
    assert data["schema_version"] < 6 and "unresolved" not in data["cells"][0]
    results = results_io.load(TOPK)
    cells = {cell.id: cell for cell in results.cells}
    assert cells["flag_gems/tokens=1,experts=8,k=2,dtype=bf16"].unresolved
    assert not cells["torch/tokens=1,experts=8,k=2,dtype=bf16"].unresolved
    assert {c.id for c in results.cells if c.unresolved} == {
        c.id for c in results.cells if c.summary is not None and stats.unresolved(
            c.summary.median_s, c.summary.ci_low_s, c.summary.ci_high_s)}
    # Written back, it is a version 6 file that reads the same.
    results_io.save(results, tmp_path / "results.json")
    assert results_io.load(tmp_path / "results.json") == results


def _with_noisy_cell(axes: dict[str, list[Any]] | None = None, median: float | None = None):
    results = copy_results(axes)
    noisy = _built(DIFFERENCES)
    summary = noisy.summary
    assert summary is not None
    if median is not None:
        summary = summary.model_copy(update={"median_s": median})
    results.cells[0] = results.cells[0].model_copy(
        update={"summary": summary, "unresolved": True})
    return results


def test_the_report_flags_it_and_prints_no_negative_time(tmp_path: Path) -> None:
    results = _with_noisy_cell()
    write_report(results, tmp_path)
    text = (tmp_path / "report.md").read_text()
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {results.cells[0].id} |")]
    assert "| < 7.4 µs |" in row and "unresolved: the CI reaches 0" in row
    assert "-0.4" not in text and "−0.4" not in text
    assert "1 cell **unresolved**" in text and "timer.l2: warm" in text
    html = (tmp_path / "report.html").read_text()
    assert "&lt; 7.4 µs" in html and "<b>unresolved</b>" in html and "-0.4" not in html


def test_on_a_cpu_the_report_and_terminal_suggest_no_gpu_timer_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CPU timer neither flushes the L2 nor subtracts a flush: `timer.l2: warm` and
    # `timer.kind: event` there were advice a CPU run cannot take.
    from kernbench.commands.run import report

    results = _with_noisy_cell().model_copy(update={"device": "cpu"})
    write_report(results, tmp_path)
    for name in ("report.md", "report.html"):
        text = (tmp_path / name).read_text()
        assert "unresolved" in text and "timer.budget_s" in text and "quieter machine" in text
        assert "timer.l2" not in text and "timer.kind" not in text and "graph" not in text
    report(results, tmp_path)
    printed = capsys.readouterr().out
    assert "1 unresolved:" in printed and "quieter machine" in printed
    assert "timer.l2" not in printed and "timer.kind" not in printed


def test_a_median_at_or_below_zero_is_not_printed_as_a_time(tmp_path: Path) -> None:
    results = _with_noisy_cell(median=-0.3e-6)
    write_report(results, tmp_path)
    (row,) = [line for line in (tmp_path / "report.md").read_text().splitlines()
              if line.startswith(f"| {results.cells[0].id} |")]
    assert "| ok | — | < 7.4 µs |" in row and "-" not in row.split("|")[3]
    point = figure_data(results, "time")["series"][0]["points"][0]
    assert point["value"] is None and point["reason"] == "median at or below 0"


def test_the_time_figure_draws_the_interval_down_to_zero_and_marks_the_cell() -> None:
    data = figure_data(_with_noisy_cell(), "time")
    first = data["series"][0]["points"][0]
    assert first["unresolved"] is True and first["low"] == 0.0 and first["value"] > 0
    assert all(p["low"] is None or p["low"] >= 0 for s in data["series"] for p in s["points"])
    assert not any(p.get("unresolved") for p in data["series"][0]["points"][1:])


@pytest.mark.parametrize(("axes", "mark"), [(None, "Line2D"), ({"kind": ["rows"]}, "Rectangle")])
def test_the_legend_shows_the_unresolved_mark_the_layout_draws(
    axes: dict[str, list[Any]] | None, mark: str
) -> None:
    ax = draw(figure_data(_with_noisy_cell(axes), "time")).axes[0]
    (handle,) = [h for h in ax.get_legend().legend_handles
                 if h is not None and h.get_label() == LABEL]
    assert type(handle).__name__ == mark  # a square on a line, a cross-hatch on a bar
    if mark == "Rectangle":
        assert [HATCH in (bar.get_hatch() or "") for bar in ax.patches[:2]] == [True, False]
    else:
        squares = [line for line in ax.lines if line.get_marker() == "s"
                   and line.get_color() == COLOR]
        assert len(squares) == 1 and list(squares[0].get_xdata()) == [1024]


def test_the_export_says_which_cells_are_unresolved() -> None:
    results = _with_noisy_cell()
    table = list(csv.DictReader(io.StringIO(to_csv(results))))
    assert {row["cell"]: row["unresolved"] for row in table}[results.cells[0].id] == "true"
    assert {row["unresolved"] for row in table[1:]} == {"false"}
    entries = json.loads(to_bench(results))
    assert "unresolved" in entries[0]["extra"] and "unresolved" not in entries[1]["extra"]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_reports_advise_what_the_terminal_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str
) -> None:
    # The CPU/GPU choice of advice is made once (analyze/stats.unresolved_advice): the
    # reports' own wording had drifted from the terminal's (timer.min_samples).
    from kernbench.commands.run import report

    results = _with_noisy_cell().model_copy(update={"device": device})
    write_report(results, tmp_path)
    report(results, tmp_path)
    printed = capsys.readouterr().out
    (line,) = [line for line in printed.splitlines() if "1 unresolved:" in line]
    remedy = line.split(f"{stats.UNRESOLVED_RULE} (", 1)[1].rsplit("), flagged", 1)[0]
    assert "timer.budget_s" in remedy and ("timer.l2" in remedy) == (device == "cuda")
    for name in ("report.md", "report.html"):
        text = html.unescape((tmp_path / name).read_text())
        assert f"{remedy[0].upper()}{remedy[1:]}." in text
