"""A line figure of more lines than a plot can show is split into panels by one or two
of its other axes (render.panels; ADR 0052, addendum on panels)."""

from __future__ import annotations

from typing import Any

from fixtures_sweeps import attention_axes, sweep_results

from kernbench.render import figure_data
from kernbench.render.generic_draw import draw
from kernbench.render.panels import MAX_LINES


def _topk_axes(tokens: tuple[int, ...] = (1, 128, 1024)) -> list[dict[str, Any]]:
    # ops-moe-topk's full sweep: 2 variants x 3 expert counts x 2 ks x 2 dtypes.
    return [{"tokens": t, "experts": e, "k": k, "dtype": d} for t in tokens
            for e in (8, 64, 256) for k in (2, 8) for d in ("bf16", "fp32")]


def _panel_sizes(data: dict[str, Any]) -> list[int]:
    return [len(panel["series"]) for panel in data["panels"]]


def test_a_figure_of_few_lines_stays_one_plot_and_its_data_unchanged() -> None:
    combos = [{"seq": s, "causal": c} for s in (512, 1024) for c in (False, True)]
    data = figure_data(sweep_results(combos), "time")
    assert len(data["series"]) == MAX_LINES
    assert "panels" not in data and "panel_axes" not in data and "share_y" not in data
    assert len(draw(data).axes) == 1


def test_the_attention_sweep_is_a_panel_per_mask_and_dtype() -> None:
    # 4 backends x 2 shapes x causal x 2 dtypes: 32 lines. Words before numbers, and the
    # zipped heads and head_dim make 2 panels of 16, not 4.
    data = figure_data(sweep_results(attention_axes()), "time")
    assert len(data["series"]) == 32
    assert data["panel_axes"] == ["causal", "dtype"]
    assert [(p["title"], p["row"], p["col"]) for p in data["panels"]] == [
        ("causal=False · dtype=bf16", 0, 0), ("causal=False · dtype=fp16", 0, 1),
        ("causal=True · dtype=bf16", 1, 0), ("causal=True · dtype=fp16", 1, 1)]
    assert _panel_sizes(data) == [8, 8, 8, 8]
    assert data["panels"][0]["axes"] == {"causal": "False", "dtype": "bf16"}
    assert data["share_y"]


def test_one_panel_axis_is_taken_before_two() -> None:
    # 24 top-k lines: no 2-value axis alone brings a panel to 8 lines; experts (3) does.
    data = figure_data(sweep_results(_topk_axes(), ("torch", "flag_gems")), "time")
    assert data["panel_axes"] == ["experts"]
    assert [p["title"] for p in data["panels"]] == ["experts=8", "experts=64", "experts=256"]
    assert _panel_sizes(data) == [8, 8, 8]


def test_zipped_axes_count_as_the_panels_they_make() -> None:
    # 4 backends x 2 shapes x 3 modes: 24 lines. heads and head_dim, zipped, are 2 panels
    # of 12 alone or together (not 4 of 6 together): only mode brings a panel to 8.
    combos = [c for c in attention_axes() if not c["causal"] and c["dtype"] == "bf16"]
    combos = [{**c, "mode": m} for c in combos for m in ("a", "b", "c")]
    data = figure_data(sweep_results(combos), "time")
    assert len(data["series"]) == 24
    assert data["panel_axes"] == ["mode"]
    assert [p["title"] for p in data["panels"]] == ["mode=a", "mode=b", "mode=c"]
    assert _panel_sizes(data) == [MAX_LINES] * 3


def test_each_panel_is_a_plot_with_one_legend_and_no_marks_for_panel_axes() -> None:
    data = figure_data(sweep_results(attention_axes()), "time")
    figure = draw(data)
    plots = [ax for ax in figure.axes if ax.lines]
    assert [ax.get_title() for ax in plots] == [p["title"] for p in data["panels"]]
    assert [len(ax.containers) for ax in plots] == [8, 8, 8, 8]
    legends = [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    labels = [text.get_text() for text in legends[0].get_texts()]
    assert labels[:4] == ["math", "flash", "efficient", "cudnn"]
    assert not [label for label in labels if label.startswith(("causal=", "dtype="))]
    assert len({ax.get_ylim() for ax in plots}) == 1  # one value axis for all


def test_panels_far_apart_keep_a_value_axis_each() -> None:
    results = sweep_results(attention_axes())
    results.hardware = None  # no peak to draw: the rates decide the axis alone
    for cell in results.cells:
        if cell.axes["dtype"] == "fp16":  # five times slower, on a linear rate axis
            cell.metrics["tflops"] /= 5
    data = figure_data(results, "throughput")
    assert not data["log_y"] and not data["share_y"]
    plots = [ax for ax in draw(data).axes if ax.lines]
    assert plots[0].get_ylim()[1] > 4 * plots[1].get_ylim()[1]
