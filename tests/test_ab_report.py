from __future__ import annotations

import html
from pathlib import Path

import pytest
from ab_fixtures.build import manifest, outcomes
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.analysis import analyze
from kernbench.ab.compare import Comparison, markdown
from kernbench.ab.outcomes import STATUS_FORMAT
from kernbench.ab.outputs import closing_lines
from kernbench.ab.schedule import MANIFEST_FORMAT
from kernbench.errors import UserError
from kernbench.render.ab import draw_ab_figure, round_marker
from kernbench.render.ab_report import render_markdown
from kernbench.render.report import write_ab_html
from kernbench.results.ab import (
    AA_ALPHA,
    AA_VERDICT_MEANINGS,
    AB_FORMAT,
    TURNS_FORMAT,
    VERDICT_MEANINGS,
)
from kernbench.spec.ab_model import MIN_ROUNDS

REPO = Path(__file__).resolve().parents[1]


def slower_on_b(run: str, variant: str, size: int) -> float:
    return size * 1e-6 * (1.1 if run.endswith("_B") else 1.0)


def test_figure_is_a_png_and_skipped_without_cells(tmp_path):
    plan = manifest(rounds=6, aa=True)
    report = analyze(plan, outcomes(plan, slower_on_b))
    path = draw_ab_figure(report, tmp_path / "ab.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = report.model_copy(update={"cells": []})
    assert draw_ab_figure(empty, tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_markdown_has_the_table_summary_and_the_low_coverage_note():
    plan = manifest(rounds=4, aa=True)
    text = render_markdown(analyze(plan, outcomes(plan, slower_on_b)), "ab.png")
    assert "| fast/size=100 | slower | +10.00 % | [+10.00 %, +10.00 %] | 87.5 % |" in text
    assert "A/A floor |" in text
    assert "- Verdicts: faster 0, slower 4, same 0, unstable 0 (of 4 cells)." in text
    assert "`fast`: geometric-mean B/A time ratio 1.1000 (+10.00 %)." in text
    assert "each interval is the min-max, coverage 87.5%" in text
    assert "![per-round deltas](ab.png)" in text


def test_markdown_without_cells_says_so():
    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, lambda run, variant, size: None))
    text = render_markdown(report, None)
    assert "No cell has a verdict." in text
    assert ("| fast | 1 | r1_A | [r1_A/log.txt](r1_A/log.txt) | "
            "fast/size=100: failed: RuntimeError: boom |") in text


def test_a_cell_judged_without_a_failed_round_keeps_its_row_and_says_so(tmp_path):
    plan = manifest(rounds=3, aa=True)

    def median_of(run: str, variant: str, size: int) -> float | None:
        return None if (run, variant, size) == ("r2_A", "fast", 400) else slower_on_b(
            run, variant, size)

    report = analyze(plan, outcomes(plan, median_of))
    text = render_markdown(report, None)
    assert "| fast/size=400 | slower |" in text
    assert "- Judged without a failed round: fast/size=400 (rounds 1, 3 of 3)." in text
    assert "| fast | 2 | r2_A | [r2_A/log.txt](r2_A/log.txt) | fast/size=400: failed:" in text
    assert draw_ab_figure(report, tmp_path / "ab.png") is not None


def test_the_summary_says_who_recorded_the_pins_and_who_replayed_them():
    plan = manifest(rounds=2)
    report = analyze(plan, outcomes(plan, slower_on_b))
    assert "Pins" not in render_markdown(report, None)  # no pins used: no line
    runs = [run.model_copy(update={"pins": {"recorded": 2} if run.name == "r1_A"
                                   else {"replayed": 2}}) for run in report.runs]
    text = render_markdown(report.model_copy(update={"runs": runs}), None)
    assert "- Pins: recorded by r1_A (2); replayed by the 3 other runs (2 each)." in text
    runs[2] = runs[2].model_copy(update={"pins": {}})
    text = render_markdown(report.model_copy(update={"runs": runs}), None)
    assert f"none replayed by {runs[2].name}" in text


def test_the_summary_names_cells_whose_runs_used_different_timers():
    # On the H200 two of eighteen side processes timed a 3 µs topk with events, the rest
    # with graphs: the report must say so, not only show an odd round.
    plan = manifest(rounds=2)
    found = outcomes(plan, slower_on_b)
    for name, outcome in found.items():
        for cell in outcome.results.cells:
            cell.rounds[0].timer = "event" if (name, cell.id) == ("r2_B", "fast/size=100") \
                else "graph"
    report = analyze(plan, found)
    timers = {cell.id: cell.timers for cell in report.cells}
    assert timers["fast/size=100"] == {"graph": 3, "event": 1}
    assert timers["slow/size=400"] == {}  # one timer: nothing to say
    assert ("- Timers differ between the runs of fast/size=100 (graph 3, event 1): those "
            "deltas compare unlike samples.") in render_markdown(report, None)


def test_both_reports_name_a_cell_left_without_a_verdict_and_keep_the_variants_others(
    tmp_path,
):
    plan = manifest(rounds=3)

    def median_of(run: str, variant: str, size: int) -> float | None:
        return None if run.endswith("_B") and (variant, size) == ("fast", 400) else (
            slower_on_b(run, variant, size))

    report = analyze(plan, outcomes(plan, median_of))
    line = "No verdict (no round measured by every side): fast/size=400."
    assert f"- {line}" in render_markdown(report, None)
    page = write_ab_html(report, tmp_path)[0].read_text()
    assert f"<li>{line}</li>" in page
    # The variant's other cell keeps its verdict: the page must not say it has none.
    assert "<tr class=\"slower\"><td>fast/size=100</td>" in page
    assert "no verdicts" not in page
    assert "<h2>Failures</h2>" in page
    assert "<li>Judged without a failed round" not in page


def test_the_figure_marks_rounds_by_which_side_ran_first_only_where_one_did():
    # An interleaved round's sides take turns in ABBA blocks: its a_first is always True
    # (the sides' numbering), and every round was drawn and labelled "A first".
    assert round_marker("interleaved", True) == round_marker("interleaved", False)
    assert "first" not in round_marker("interleaved", True)[1]
    assert round_marker("sequential", True) == ("o", "round, A first")
    assert round_marker("sequential", False) == ("^", "round, B first")
    from kernbench.render.ab import ab_figure

    plan = manifest(rounds=4)
    sequential = analyze(plan, outcomes(plan, slower_on_b))
    for schedule, expected in (("sequential", ["round, A first", "round, B first"]),
                               ("interleaved", ["round (ABBA turns)"])):
        figure = ab_figure(sequential.model_copy(update={"schedule": schedule}))
        assert figure is not None
        (axes,) = figure.axes
        legend = [text.get_text() for text in axes.get_legend().get_texts()]
        assert [label for label in legend if label.startswith("round")] == expected, schedule
        markers = {line.get_marker() for line in axes.get_lines()} - {"|", "None"}
        assert markers == ({"o", "^"} if schedule == "sequential" else {"o"}), schedule


def test_the_delta_axis_reads_as_signed_plain_percentages():
    # +100% pushes the axis to symlog, whose own labels were 10^0, 10^1 and no minus side.
    from kernbench.render.ab import ab_figure

    plan = manifest(rounds=4)
    report = analyze(plan, outcomes(
        plan, lambda run, variant, size: size * 1e-6 * (2.0 if run.endswith("_B") else 1.0)))
    figure = ab_figure(report)
    assert figure is not None
    figure.canvas.draw()
    (axes,) = figure.axes
    assert axes.get_xscale() == "symlog"
    labels = [label.get_text() for label in axes.get_xticklabels() if label.get_text()]
    assert {"-1", "0", "+1", "+10", "+100"} <= set(labels), labels
    assert not [label for label in labels if "$" in label or "^" in label]


def test_the_figure_says_where_when_and_how_the_ab_ran():
    from kernbench.render.ab import ab_figure

    plan = manifest(rounds=4, aa=True)
    report = analyze(plan, outcomes(plan, slower_on_b))
    figure = ab_figure(report)
    assert figure is not None
    text = figure.get_supxlabel()
    when = report.created_utc[:16].replace("T", " ")
    assert text == (f"measured on cpu (model not recorded)\nkernbench (version unknown), no git "
                    f"commit  ·  run {when} UTC  ·  {report.schedule} schedule"
                    f"  ·  min effect {report.min_effect_pct:g}%  ·  A/A side for the noise floor"
                    "\nnote: with 4 rounds no order-statistic pair covers the median with 95%; "
                    "each interval is the min-max, coverage 87.5%")


def test_a_saved_figure_says_its_intervals_are_weak_and_its_ab_was_interrupted():
    from kernbench.render.ab import ab_figure

    plan = manifest(rounds=2)
    report = analyze(plan, outcomes(plan, slower_on_b)).model_copy(update={"planned_rounds": 6})
    figure = ab_figure(report)
    assert figure is not None
    assert figure.axes[0].get_title().endswith(", 2 of 6 rounds (interrupted)")
    assert ("note: with 2 rounds no order-statistic pair covers the median with 95%; each "
            "interval is the min-max, coverage 50.0%") in figure.get_supxlabel().splitlines()
    whole = ab_figure(analyze(manifest(rounds=6), outcomes(manifest(rounds=6), slower_on_b)))
    assert whole is not None and whole.axes[0].get_title().endswith(", 6 rounds")
    assert "note:" not in whole.get_supxlabel()


def test_long_cell_names_widen_the_figure_not_squeeze_the_delta_axis():
    from kernbench.render.ab import ab_figure

    plan = manifest(rounds=4)
    report = analyze(plan, outcomes(plan, slower_on_b))
    long_ids = report.model_copy(update={"cells": [
        cell.model_copy(update={"id": f"{cell.id},shape=100x2048x2048x2048,dtype=bf16"})
        for cell in report.cells]})
    short, long = ab_figure(report), ab_figure(long_ids)
    assert short is not None and long is not None
    for figure in (short, long):
        figure.draw_without_rendering()  # lay it out
    assert long.get_figwidth() > short.get_figwidth()
    (axes,) = long.axes
    assert axes.get_position().width * long.get_figwidth() > 3.5  # inches of delta axis


def test_one_cell_and_the_switch_checks_label_read_as_english(tmp_path):
    plan = manifest(rounds=4)
    report = analyze(plan, outcomes(plan, slower_on_b))
    report = report.model_copy(update={
        "summary": report.summary.model_copy(update={"cells": 1}),
        "switch_note": "warning: KB_X appears nowhere in k.py (kernel 'k')"})
    text = render_markdown(report, None)
    assert "unstable 0 (of 1 cell).\n" in text
    assert "\n- Switch check (warning): KB_X appears nowhere in k.py (kernel 'k')\n" in text
    assert closing_lines(report)[0].startswith("verdicts: faster 0, slower 4, same 0, "
                                               "unstable 0 (of 1 cell); ")
    html = "\n".join(p.read_text() for p in write_ab_html(report, tmp_path)
                     if p.suffix == ".html")
    assert "(of 1 cell).</li>" in html
    assert "<li>Switch check (warning): KB_X appears nowhere" in html


def test_an_ab_file_that_is_no_json_object_is_named_with_its_article(tmp_path):
    for what, path in ((AB_FORMAT, tmp_path / "ab.json"), (TURNS_FORMAT, tmp_path / "t.json"),
                       (MANIFEST_FORMAT, tmp_path / "ab-run.json"),
                       (STATUS_FORMAT, tmp_path / "status.json")):
        path.write_text("[]")
        with pytest.raises(UserError) as caught:
            what.read(path)
        assert " not a a" not in str(caught.value) and " not a i" not in str(caught.value)
    assert str(caught.value) == f"{path}: not a status of an A/B side (a JSON object is " \
        "expected)"


def flat(text: str) -> str:
    return " ".join(text.split())


def test_help_compare_and_both_reports_say_what_each_verdict_means_in_one_text(tmp_path):
    # ADR 0020: one text, with the rule's own numbers (MIN_ROUNDS, AA_ALPHA) in it.
    assert f"fewer than {MIN_ROUNDS} rounds" in VERDICT_MEANINGS
    assert f"A/A p is {AA_ALPHA:g} or more" in AA_VERDICT_MEANINGS
    plan = manifest(rounds=6, aa=True)
    report = analyze(plan, outcomes(plan, slower_on_b))
    page = html.unescape(write_ab_html(report, tmp_path)[0].read_text())
    for text in (render_markdown(report, None), page):
        assert f"verdict: {VERDICT_MEANINGS} {AA_VERDICT_MEANINGS}" in flat(text)
    plain = analyze(manifest(rounds=6), outcomes(manifest(rounds=6), slower_on_b))
    assert f"{VERDICT_MEANINGS} The threshold is the minimum effect." in flat(
        render_markdown(plain, None))
    assert AA_VERDICT_MEANINGS not in flat(render_markdown(plain, None))
    comparison = Comparison(cells=[], only_in_base=[], only_in_new=[], stopped_working=[],
                            not_ok=[], min_effect_pct=1.0)
    assert VERDICT_MEANINGS in markdown(comparison, "BASE.json", "NEW.json")
    shown = CliRunner().invoke(cli.app, ["ab", "--help"], env={"COLUMNS": "200"}).output
    assert f"{VERDICT_MEANINGS} {AA_VERDICT_MEANINGS}" in flat(shown)
    # The page is read on its own: it defines its columns itself.
    assert "within-side noise: median relative IQR" in page
    assert "report.md beside this page" not in page


def noisy_aa_round_one(run: str, variant: str, size: int) -> float:
    """B as fast as A; round 1's second A/A side 5 % slower: a floor of 5 %."""
    return size * 1e-6 * (1.05 if run == "r1_AA2" else 1.0)


def test_a_same_judged_against_a_raised_threshold_says_how_wide_it_was(tmp_path):
    # The sequential ab-drift A/B read a true +3 % as `same` against A/A floors of 7-9 %,
    # and the terminal said only "same 4".
    plan = manifest(rounds=6, aa=True, min_effect=0.5)
    report = analyze(plan, outcomes(plan, noisy_aa_round_one))
    assert {c.verdict for c in report.cells} == {"same"}
    note = ("4 of 4 cells called same were judged against a threshold the A/A floor raised "
            "above the 0.50 % minimum effect (up to ±5.00 %): same there rules out only an "
            "effect beyond it")
    assert f"note: {note}" in closing_lines(report)
    assert f"- Note: {note}." in render_markdown(report, None)
    assert f"<li>Note: {note}.</li>" in write_ab_html(report, tmp_path)[0].read_text()
    plain = analyze(plan, outcomes(plan, slower_on_b))  # thresholds at the minimum effect
    assert not any(line.startswith("note:") for line in closing_lines(plain))


def test_the_figure_legend_names_the_median_and_the_interval_with_its_coverage():
    # The bar and the tick of each cell were drawn without a word of what they are.
    from kernbench.render.ab import ab_figure

    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, slower_on_b))
    figure = ab_figure(report)
    assert figure is not None
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert "median, 96.9 % interval" in legend
    cells = [report.cells[0].model_copy(update={"ci_coverage": 0.5}), *report.cells[1:]]
    figure = ab_figure(report.model_copy(update={"cells": cells}))
    assert figure is not None
    assert "median, 50-96.9 % interval" in [
        text.get_text() for text in figure.axes[0].get_legend().get_texts()]


def test_every_output_of_an_ab_of_chosen_cells_names_its_only(tmp_path):
    # `ab --only n=10000` read "slower 1 (of 1 cell)" with nothing saying the bench had more.
    from kernbench.render.ab import _footnote

    plan = manifest(rounds=2).model_copy(update={"only": ["size=100", "variant=fast"]})
    report = analyze(plan, outcomes(plan, slower_on_b))
    assert report.only == ["size=100", "variant=fast"]
    assert AB_FORMAT.model.model_validate(report.model_dump(mode="json")).only == report.only
    flags = "--only size=100 --only variant=fast"
    assert f"Only the cells chosen with `{flags}`." in render_markdown(report, None)
    assert f"Only the cells chosen with <code>{flags}</code>." in write_ab_html(
        report, tmp_path)[0].read_text()
    assert f"cells chosen with {flags}" in _footnote(report)
    whole = analyze(manifest(rounds=2), outcomes(manifest(rounds=2), slower_on_b))
    assert "chosen with" not in render_markdown(whole, None) + _footnote(whole)



def test_the_figure_of_an_auto_ab_says_up_to_how_many_rounds_it_would_have_run():
    from kernbench.render.ab import _footnote

    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, slower_on_b))
    assert "rounds auto" not in _footnote(report)
    assert "rounds auto, up to 8" in _footnote(report.model_copy(update={"max_rounds": 8}))


def test_the_legend_of_a_one_cell_figure_clears_its_footnote():
    # An A/B of one cell (`--only`) drew its legend down over the footnote.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from kernbench.render.ab import ab_figure

    plan = manifest(rounds=2)
    report = analyze(plan, outcomes(plan, slower_on_b))
    figure = ab_figure(report.model_copy(update={"cells": report.cells[:1]}))
    assert figure is not None
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    legend = figure.axes[0].get_legend().get_window_extent(renderer)
    footnote = figure._supxlabel.get_window_extent(renderer)
    assert legend.y0 >= footnote.y1


def test_the_reports_write_a_delta_past_100_percent_to_the_unit():
    plan = manifest(rounds=2)
    report = analyze(plan, outcomes(plan, lambda run, variant, size: size * 1e-6 * (
        20.0 if run.endswith("_B") else 1.0)))
    text = render_markdown(report, None)
    assert "| fast/size=100 | slower | +1900 % | [+1900 %, +1900 %] |" in text
    assert "`fast`: geometric-mean B/A time ratio 20.0000 (+1900 %)." in text


def test_both_pages_give_each_sides_time_beside_the_delta(tmp_path):
    # '+567 %' alone does not say whether a kernel of 50 µs or of 5 ms got slower.
    plan = manifest(rounds=4, aa=True)
    report = analyze(plan, outcomes(plan, slower_on_b))
    text = render_markdown(report, None)
    assert "| coverage | A time | B time | threshold |" in text
    assert "| 87.5 % | 100 µs | 110 µs | ±" in text
    assert "A time, B time: the time of one call" in text
    write_ab_html(report, tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert '<td class="num">100 µs</td><td class="num">110 µs</td>' in page


@pytest.mark.parametrize("only", [["dtype=tf32"], ["dtype=tf32,bf16", "variant=cublas",
                                                   "shape=4096x4096x4096,8192x8192x8192"]])
def test_the_footnote_fits_the_figure_with_an_only_note(only: list[str]) -> None:
    # ab-tf32's footnote, with its GPU's UUID and the --only note, ran past the right edge.
    from matplotlib.text import Text

    from kernbench.render.ab import ab_figure

    report = AB_FORMAT.read(REPO / "benches" / "data" / "ab-schedules-h200" /
                            "tf32-interleaved-5ms-run12" / "ab.json")
    assert report.measured_on is not None  # the machine line, with the GPU's UUID
    figure = ab_figure(report.model_copy(update={"only": only}))
    assert figure is not None
    figure.set_dpi(110)  # ab.png's: text is hinted, its width depends on the dpi
    figure.canvas.draw()
    (footnote,) = [text for text in figure.findobj(Text)
                   if text.get_text() == figure.get_supxlabel()]
    assert "cells chosen with --only dtype=tf32" in footnote.get_text().replace("\n    ", " ")
    assert footnote.get_window_extent().x1 <= figure.bbox.x1
