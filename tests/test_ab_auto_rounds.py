"""An A/B of `--rounds auto[:MAX]` interrupted in a round it added: its report keeps
saying that the rounds were auto and up to what, not only the round it had reached."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_ab_sides import OneBadRound, SideRequest, run

from kernbench.errors import EXIT_INTERRUPTED
from kernbench.render.ab_report import render_markdown


class StopsInRound7(OneBadRound):
    def __call__(self, request: SideRequest) -> int:
        if request.run.name == "r7_A":
            raise KeyboardInterrupt
        return super().__call__(request)


def test_an_auto_ab_interrupted_in_an_added_round_keeps_its_maximum(tmp_path: Path) -> None:
    outcome = run(tmp_path, StopsInRound7(), rounds="auto:12")
    report = outcome.report
    assert outcome.exit_code == EXIT_INTERRUPTED
    assert (report.rounds, report.planned_rounds, report.max_rounds) == (6, 7, 12)
    text = render_markdown(report, None)
    assert ("6 rounds (interrupted: 7 asked for; judged on the rounds every side finished) "
            "(auto: more while a cell was unstable, up to 12) on cpu") in text


def _columns_of_report_md(text: str) -> list[str]:
    header = next(line for line in text.splitlines() if line.startswith("| cell | verdict |"))
    return [column.strip() for column in header.strip("|").split("|")]


def _columns_of_report_html(text: str) -> list[str]:
    header = next(row for row in text.split("<tr>") if row.startswith("<th>cell</th><th>verdict"))
    return re.findall(r"<th>(.*?)</th>", header)


@pytest.mark.parametrize("aa", [False, True])
def test_report_html_has_the_columns_of_report_md(tmp_path: Path, aa: bool) -> None:
    # report.html and report.md share their notes on each column, so the page shows the
    # same ones: it lacked the order effect and, with auto, the rounds needed.
    outcome = run(tmp_path, OneBadRound(), rounds="auto:12", aa=aa)
    report = outcome.report
    md_columns = _columns_of_report_md((outcome.folder / "report.md").read_text())
    assert {"order effect", "rounds needed"} <= set(md_columns)
    assert ("A/A floor" in md_columns) == aa
    html = (outcome.folder / "report.html").read_text()
    assert _columns_of_report_html(html) == md_columns
    slow = next(c for c in report.cells if c.variant == "slow")
    assert f'<td class="num">{slow.rounds_needed}</td></tr>' in html
