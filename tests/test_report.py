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
@pytest.mark.parametrize("name", ["milestone-1h-gemm.json.gz", "milestone-1h-ccl.json"])
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
    assert not re.search(r'(src|href)="(?!data:)', page)  # self-contained: nothing fetched
    assert page.count("<tr class=") == len(results.cells)


def test_flags_and_failures_are_shown(tmp_path):
    results = results_io.load(DATA / "milestone-1h-gemm.json.gz")
    cells = list(results.cells)
    cells[0] = cells[0].model_copy(update={"status": "failed", "reason": "boom: out of memory",
                                           "summary": None})
    (md,) = [p for p in write_report(results.model_copy(update={"cells": cells}), tmp_path)
             if p.suffix == ".md"]
    text = md.read_text()
    assert "| boom: out of memory |" in text
    assert "under-tile" in text
    assert "1 failed" in text


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
