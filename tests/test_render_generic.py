"""The figures that fit any bench: time, throughput and bandwidth, as lines over a numeric
axis or bars over cells, titled from the bench and never as a GEMM."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import invoke, new_project
from fixtures_results import h200_profile, make_gemm_results, summary
from fixtures_sweeps import attention_axes, sweep_results

from kernbench.errors import EXIT_OK
from kernbench.plan import cell_id
from kernbench.render import figure_data, generic_draw, render_results
from kernbench.render.generic_draw import draw
from kernbench.results.model import CellResult, Results
from kernbench.spec.models import Bench, HardwareProfile

SIZES = (1024, 65536, 4194304)
# A copy moving 4 bytes in and 4 out per element at about 1000 GB/s, plus 2 µs per call.
SECONDS = {size: 2e-6 + 8 * size / 1000e9 for size in SIZES}


def copy_results(
    axes: dict[str, list[Any]] | None = None, failed: str | None = None, hardware: bool = True
) -> Results:
    """A memory copy measured over `axes` (default: three sizes) in two variants."""
    axes = axes or {"size": list(SIZES)}
    spec = Bench.model_validate(
        {
            "name": "memcopy",
            "description": "copies",
            "kernel": "memcopy:make",
            "axes": axes,
            "variants": {"copyto": {}, "slice": {}},
            "metrics": {"bytes": "8*size"},
            "figures": ["time", "throughput", "bandwidth"],
        }
    ).model_dump(mode="json")
    cells = []
    for variant, slower in (("copyto", 1.0), ("slice", 1.5)):
        for values in _product(axes):
            size = int(values.get("size", 4096))
            common = {
                "id": cell_id(variant, values),
                "index": len(cells),
                "variant": variant,
                "axes": values,
                "params": {**values, "device": "cuda"},
            }
            if common["id"] == failed:
                cells.append(CellResult(status="failed", reason="boom", **common))
                continue
            median = SECONDS.get(size, 1e-5) * slower
            metrics = {"bytes": 8.0 * size, "time_s": median, "gbs": 8 * size / median / 1e9}
            cells.append(
                CellResult(
                    status="ok", summary=summary(median, [median], 9), metrics=metrics, **common
                )
            )
    return Results(
        bench="memcopy",
        spec_hash="c0ffee00c0ffee00",
        spec=spec,
        created_utc="2026-11-30T09:30:12Z",
        complete=True,
        device="cuda",
        rounds=1,
        provenance={"device_name": "NVIDIA H200"},
        hardware=h200_profile() if hardware else None,
        cells=cells,
    )


def _product(axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    combos: list[dict[str, Any]] = [{}]
    for name, values in axes.items():
        combos = [{**combo, name: value} for combo in combos for value in values]
    return combos


def _values(data: dict[str, Any], label: str) -> list[Any]:
    (series,) = [s for s in data["series"] if s["label"] == label]
    return [point["value"] for point in series["points"]]


def test_bandwidth_is_a_line_per_variant_against_the_device_bandwidth() -> None:
    data = figure_data(copy_results(), "bandwidth")
    assert data["title"] == "memcopy: achieved memory bandwidth vs size on NVIDIA H200"
    assert (data["x_label"], data["y_label"]) == ("size", "achieved memory bandwidth (GB/s)")
    assert data["layout"] == "lines" and data["log_x"]
    assert [s["label"] for s in data["series"]] == ["copyto", "slice"]
    expected = [pytest.approx(8 * size / SECONDS[size] / 1e9, rel=1e-5) for size in SIZES]
    assert _values(data, "copyto") == expected
    assert data["ceiling"] == {
        "label": "device memory bandwidth",
        "value": 4230.0,
        "source": "measured",
    }


def test_time_is_shown_in_a_unit_that_reads_well() -> None:
    data = figure_data(copy_results(), "time")
    assert data["title"] == "memcopy: time per call vs size on NVIDIA H200"
    assert data["y_label"] == "time per call (µs)"
    assert _values(data, "copyto") == [pytest.approx(SECONDS[s] * 1e6, rel=1e-5) for s in SIZES]
    (point, *_) = data["series"][0]["points"]
    assert point["low"] < point["value"] < point["high"]


def test_throughput_of_a_bench_without_mnk_is_its_bytes_rate() -> None:
    data = figure_data(copy_results(), "throughput")
    assert data["y_label"] == "throughput (GB/s)"  # the largest, 945 GB/s, in 1-3 digits
    assert _values(data, "copyto")[-1] == pytest.approx(
        8 * SIZES[-1] / SECONDS[SIZES[-1]] / 1e9, rel=1e-5
    )


def test_throughput_of_a_gemm_bench_is_still_the_gemm_figure() -> None:
    data = figure_data(make_gemm_results(shapes=[(256, 256, 256)], dtypes=["bf16"]), "throughput")
    assert data["unit"] == "TFLOP/s" and data["panels"]


def test_without_a_numeric_axis_each_cell_is_a_bar() -> None:
    data = figure_data(copy_results({"kind": ["rows", "cols"]}), "time")
    assert data["layout"] == "bars" and data["x_label"] == "cell"
    assert data["title"] == "memcopy: time per call per cell on NVIDIA H200"
    assert [p["x"] for p in data["series"][0]["points"]] == ["kind=rows", "kind=cols"]


def test_the_longest_numeric_axis_is_the_line_and_the_others_name_the_series() -> None:
    data = figure_data(copy_results({"size": list(SIZES), "stride": [1, 2]}), "time")
    assert data["x_axis"] == "size"
    assert [s["label"] for s in data["series"]] == [
        "copyto · stride=1",
        "copyto · stride=2",
        "slice · stride=1",
        "slice · stride=2",
    ]


def test_a_failed_cell_is_listed_and_left_out_of_its_line() -> None:
    data = figure_data(copy_results(failed="slice/size=65536"), "bandwidth")
    assert data["not_plotted"] == [
        {"cell": "slice/size=65536", "status": "failed", "reason": "boom"}
    ]
    assert _values(data, "slice")[1] is None


def test_without_a_hardware_profile_there_is_no_ceiling() -> None:
    assert figure_data(copy_results(hardware=False), "bandwidth")["ceiling"] is None


def test_render_writes_the_generic_figures(tmp_path: Path) -> None:
    written = render_results(copy_results(failed="copyto/size=1024"), tmp_path)
    assert [p.name for p in written] == ["time.png", "throughput.png", "bandwidth.png"]
    for name in ("time", "throughput", "bandwidth"):
        data = json.loads((tmp_path / f"{name}.json").read_text())
        assert "GEMM" not in json.dumps(data)


def test_a_bench_that_names_no_figures_gets_the_time_figure(tmp_path: Path) -> None:
    results = copy_results()
    results.spec["figures"] = []
    assert [p.name for p in render_results(results, tmp_path)] == ["time.png"]


MEMCOPY = """
import numpy as np


def make(size, dtype, device, **_):
    source = np.ones(size, dtype=np.float32)
    target = np.empty_like(source)
    return lambda: np.copyto(target, source)
"""


@pytest.mark.slow
def test_a_memory_copy_bench_gets_the_generic_figures(tmp_path, monkeypatch) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    (root / "benches" / "memcopy.py").write_text(MEMCOPY)
    (root / "benches" / "memcopy.yaml").write_text(
        textwrap.dedent("""\
        name: memcopy
        description: numpy copies of growing size
        kernel: memcopy:make
        axes: {size: [1024, 65536]}
        dtypes: [fp32]
        metrics: {bytes: 2*size*itemsize}
        timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}
        figures: [time, throughput, bandwidth]
        """)
    )
    code, _, err = invoke("run", "--bench", "memcopy", "--device", "cpu", "--out", "out")
    assert code == EXIT_OK, err
    titles = {
        name: json.loads((root / "out" / "figures" / f"{name}.json").read_text())
        for name in ("time", "throughput", "bandwidth")
    }
    assert titles["time"]["title"].startswith("memcopy: time per call vs size on ")
    assert titles["throughput"]["y_label"].endswith("B/s)")
    assert titles["bandwidth"]["ceiling"]["label"] == "device memory bandwidth"
    assert all((root / "out" / "figures" / f"{name}.png").is_file() for name in titles)


def test_a_ceiling_far_above_the_data_puts_the_bandwidth_on_a_log_axis() -> None:
    # A top-k moves 0.004-0.1 GB/s: under a 4230 GB/s ceiling on a linear axis every line
    # lies on zero.
    results = copy_results()
    for cell in results.cells:
        cell.metrics["gbs"] = 0.01 * (1 + cell.index % 3)
    data = figure_data(results, "bandwidth")
    values = [p["value"] for s in data["series"] for p in s["points"]]
    assert max(values) / min(values) < 30 and data["log_y"]
    ax = draw(data).axes[0]
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] < min(values)
    assert ax.get_ylim()[1] > data["ceiling"]["value"]


@pytest.mark.parametrize(("axes", "mark"), [(None, "Line2D"), ({"kind": ["rows"]}, "Rectangle")])
def test_the_legend_shows_the_unsteady_mark_the_layout_draws(
    axes: dict[str, list[Any]] | None, mark: str
) -> None:
    results = copy_results(axes)
    results.cells[0].unsteady = True
    ax = draw(figure_data(results, "time")).axes[0]
    (handle,) = [h for h in ax.get_legend().legend_handles
                 if h is not None and h.get_label() == "unsteady (rounds disagree)"]
    assert type(handle).__name__ == mark  # a ring on a line, dots on a bar


def _drawn_looks(data: dict[str, Any]) -> list[list[tuple[str, str, str, str]]]:
    """The looks of the lines each plot (each panel) of the figure draws."""
    return [[(line.get_color(), line.get_marker(), line.get_linestyle(), line.get_fillstyle())
             for line in (container.lines[0] for container in ax.containers)]
            for ax in draw(data).axes if ax.containers]


@pytest.mark.parametrize("others", [
    # A top-k sweep: 2 variants x 2 dtypes x 3 modes x 2 ks is 24 lines; one colour each
    # in turn ran out at 11 and drew different lines alike. Now 3 panels of 8 (a mode each).
    {"dtype": ["bf16", "fp32"], "mode": ["a", "b", "c"], "k": ["2", "8"]},
    {"mode": [f"m{i}" for i in range(9)]},
])
def test_no_two_lines_of_a_plot_look_alike_however_many_series(
    others: dict[str, list[Any]],
) -> None:
    data = figure_data(copy_results({"size": list(SIZES), **others}), "time")
    drawn = _drawn_looks(data)
    assert sum(len(plot) for plot in drawn) == len(data["series"]) > 10
    assert all(len(set(plot)) == len(plot) for plot in drawn)


def test_more_values_than_a_mark_has_forms_give_each_line_a_colour_and_marker() -> None:
    from kernbench.render.series_look import looks

    series = [{"label": f"{v} · mode=m{i}", "variant": v, "axes": {"mode": f"m{i}"}}
              for v in ("copyto", "slice") for i in range(9)]
    styles, handles = looks(series)
    assert len(set(styles.values())) == len(series) == len(handles)


def test_a_variant_keeps_its_colour_and_the_other_axes_get_marks() -> None:
    data = figure_data(copy_results({"size": list(SIZES), "stride": [1, 2]}), "time")
    by_variant: dict[str, set[str]] = {}
    (drawn,) = _drawn_looks(data)
    for look, entry in zip(drawn, data["series"], strict=True):
        by_variant.setdefault(entry["variant"], set()).add(look[0])
    assert all(len(found) == 1 for found in by_variant.values())
    assert by_variant["copyto"] != by_variant["slice"]
    labels = [t.get_text() for t in draw(data).axes[0].get_legend().get_texts()]
    assert labels[:4] == ["copyto", "slice", "stride=1", "stride=2"]


def test_an_interval_reaching_below_zero_keeps_the_log_axis_on_the_data() -> None:
    # Samples less a flush estimate can go negative; so can the low end of their interval.
    results = copy_results({"size": list(SIZES), "stride": [1, 2]})
    for cell in results.cells:
        cell.summary = summary(cell.summary.median_s * (1 + 100 * cell.index), [1.0], 9)
    results.cells[0].summary.ci_low_s = -1e-6
    data = figure_data(results, "time")
    assert data["log_y"]
    low, _ = draw(data).axes[0].get_ylim()
    values = [p["value"] for s in data["series"] for p in s["points"]]
    assert 0 < low < min(values)


def test_the_legend_says_what_the_whiskers_are_where_there_are_any() -> None:
    from kernbench.render.style import WHISKER_LABEL

    def legend_of(results: Results) -> list[str]:
        legend = draw(figure_data(results, "bandwidth")).axes[0].get_legend()
        return [text.get_text() for text in legend.get_texts()]

    assert WHISKER_LABEL in legend_of(copy_results())
    bare = copy_results()  # an interval from zero maps to no rate interval: no whiskers
    for cell in bare.cells:
        cell.summary.ci_low_s = 0.0
    assert WHISKER_LABEL not in legend_of(bare)


def test_a_line_over_few_values_has_a_tick_at_each() -> None:
    # ops-moe-masked-select's hidden sizes, 4096 and 7168, sat between ticks 4000 ... 7000.
    data = figure_data(copy_results({"size": [4096, 7168]}), "time")
    ax = draw(data).axes[0]
    assert list(ax.get_xticks()) == [4096, 7168]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4096", "7168"]


def test_a_log_axis_without_a_ceiling_ends_a_little_above_the_data() -> None:
    # The top-k time figure kept room for a ceiling label it does not have: a third of
    # its height was empty.
    results = copy_results()
    for cell in results.cells:
        cell.summary = summary(cell.summary.median_s * (1 + 100 * cell.index), [1.0], 9)
    data = figure_data(results, "time")
    assert data["log_y"] and not data.get("ceiling")
    _, top = draw(data).axes[0].get_ylim()
    highest = max(p["high"] for s in data["series"] for p in s["points"])
    assert highest < top <= 2 * highest


def _ceiling_labels(ax: Any) -> list[str]:
    return [text.get_text() for text in ax.texts if " peak " in text.get_text()]


def test_throughput_of_a_flops_bench_draws_the_peak_of_each_dtype_shown() -> None:
    combos = [{"seq": s, "dtype": d} for s in (512, 1024, 2048) for d in ("bf16", "fp32")]
    data = figure_data(sweep_results(combos, ("flash", "math")), "throughput")
    assert data["y_label"] == "throughput (TFLOP/s)"
    assert data["ceilings"] == [
        {"label": "bf16 peak", "dtype": "bf16", "value": 989.4, "unit": "TFLOP/s",
         "source": "datasheet"},
        {"label": "fp32 peak", "dtype": "fp32", "value": 66.9, "unit": "TFLOP/s",
         "source": "datasheet"},
    ]
    assert _ceiling_labels(draw(data).axes[0]) == [
        "bf16 peak 989.4 TFLOP/s (datasheet)", "fp32 peak 66.9 TFLOP/s (datasheet)"]


def test_a_peak_is_in_the_unit_the_rates_are_shown_in() -> None:
    combos = [{"seq": s} for s in (512, 1024)]  # one dtype, fp32, not an axis
    data = figure_data(sweep_results(combos, ("numpy",), rate_tflops=0.05), "throughput")
    assert data["y_label"] == "throughput (GFLOP/s)"
    assert [(c["value"], c["unit"]) for c in data["ceilings"]] == [(66900.0, "GFLOP/s")]
    assert data["log_y"]  # 50 GFLOP/s under 66900: on a linear axis the line lies on zero
    assert _ceiling_labels(draw(data).axes[0]) == ["fp32 peak 6.69e+04 GFLOP/s (datasheet)"]


def test_each_panel_draws_the_peak_of_its_own_dtype_and_equal_peaks_share_a_line() -> None:
    results = sweep_results(attention_axes())
    results.hardware["peak_tflops"]["fp16"] = {"datasheet": 989.4}
    data = figure_data(results, "throughput")
    plots = [ax for ax in draw(data).axes if ax.lines]
    assert [_ceiling_labels(ax) for ax in plots] == [
        [f"{dtype} peak 989.4 TFLOP/s (datasheet)"] for dtype in ("bf16", "fp16") * 2]
    one_plot = [{"seq": s, "dtype": d} for s in (512, 1024) for d in ("bf16", "fp16")]
    data = figure_data(sweep_results(one_plot, ("flash",)), "throughput")
    data["ceilings"][1]["value"] = data["ceilings"][0]["value"]
    data["ceilings"][1]["source"] = data["ceilings"][0]["source"]
    assert _ceiling_labels(draw(data).axes[0]) == ["bf16, fp16 peak 989.4 TFLOP/s (datasheet)"]


def test_a_figure_reads_its_profile_once_and_each_panel_its_ceilings_once(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    results = sweep_results(attention_axes())
    validated: list[object] = []
    validate = HardwareProfile.model_validate

    def counted_validate(data: Any) -> HardwareProfile:
        validated.append(data)
        return validate(data)

    monkeypatch.setattr(HardwareProfile, "model_validate", counted_validate)
    data = figure_data(results, "throughput")
    assert len(data["ceilings"]) == 2 and len(validated) == 1  # bf16's peak and fp16's
    panels = [ax for ax in draw(data).axes if ax.lines]
    picked: list[int] = []
    ceilings = generic_draw._ceilings

    def counted_ceilings(data: dict[str, Any], shown: list[dict[str, Any]]) -> list[Any]:
        picked.append(len(shown))
        return ceilings(data, shown)

    monkeypatch.setattr(generic_draw, "_ceilings", counted_ceilings)
    for share_y in (True, False):
        picked.clear()
        draw({**data, "share_y": share_y})
        assert len(picked) == len(panels) + share_y  # and all series once, where shared


def test_no_peak_without_a_profile_or_a_flops_metric() -> None:
    results = sweep_results([{"seq": s} for s in (512, 1024)])
    results.hardware = None
    assert figure_data(results, "throughput")["ceilings"] == []
    assert "ceilings" not in figure_data(copy_results(), "throughput")  # a bytes rate


def test_zipped_axes_take_one_mark() -> None:
    # heads 32 always with head_dim 64: a marker and a line style for one thing read as
    # four shapes where there are two.
    data = figure_data(sweep_results(attention_axes()), "time")
    figure = draw(data)
    (legend,) = [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    keys = [text.get_text() for text in legend.get_texts()][4:6]
    assert keys == ["heads=32 · head_dim=64", "heads=16 · head_dim=128"]
    (plot, *_) = [ax for ax in figure.axes if ax.containers]
    assert {container.lines[0].get_linestyle() for container in plot.containers} == {"-"}


@pytest.mark.parametrize(("sizes", "log"), [
    # ops-norm's hidden sizes: on a linear axis 1024 and 2048 lie 7 % of the span apart,
    # and their tick labels ran into each other.
    ([1024, 2048, 4096, 8192, 16384], True),
    ([1024, 2048, 4096], False),  # a third of the span apart: linear reads them
    ([1, 2, 3, 4, 5, 6, 7, 8], False),  # evenly spaced
    ([4096, 7168], False),
    ([1024, 65536, 4194304], True),  # spanning more than LOG_SCALE_RANGE
])
def test_the_x_axis_is_log_where_it_spaces_crowded_values_apart(
    sizes: list[int], log: bool
) -> None:
    assert figure_data(copy_results({"size": sizes}), "time")["log_x"] is log


def test_a_long_footnote_is_wrapped_to_the_figure_not_cut_at_its_edge() -> None:
    # A cloud host's name and a failed cell's reason made lines longer than a 7 in figure.
    from matplotlib.text import Text

    from kernbench.render.style import DPI

    reason = "RuntimeError: CUDA out of memory; tried to allocate 20.00 GiB of 79.11 GiB"
    axes = {"size": list(SIZES), "layout": ["row_major_contiguous"], "dtype": ["bf16"]}
    results = copy_results(axes, failed="slice/size=65536,layout=row_major_contiguous,dtype=bf16")
    results = results.model_copy(update={
        "provenance": {"device_name": "NVIDIA H200 NVL", "commit": "0123456789abcdef",
                       "dirty": True, "host": "ip-10-0-123-45.us-west-2.compute.internal"},
        "complete": False,
        "cells": [c.model_copy(update={"reason": reason}) if c.reason else c
                  for c in results.cells]})
    figure = draw(figure_data(results, "bandwidth"))
    figure.set_dpi(DPI)
    figure.canvas.draw()
    (footnote,) = [text for text in figure.findobj(Text)
                   if text.get_text() == figure.get_supxlabel()]
    assert "INCOMPLETE run" in footnote.get_text()
    assert footnote.get_window_extent().x1 <= figure.bbox.x1


def test_a_redrawn_figure_runs_its_lines_over_the_axis_the_run_drew_them_over(tmp_path):
    # ops-moe-router's committed run has tokens, experts and k at two values each: the run
    # drew lines over tokens (the bench's first), a redraw from results.json, whose axes
    # come back sorted by name, over experts.
    from kernbench.results.model import load, save

    folder = Path(__file__).resolve().parents[1] / "benches/data/ops-moe-h200/run-router"
    results = load(folder)
    assert list(results.cells[0].axes) == sorted(results.cells[0].axes)  # as read back
    in_bench_order = results.model_copy(update={"cells": [
        c.model_copy(update={"axes": {k: c.axes[k] for k in
                                      ("tokens", "hidden", "experts", "k", "dtype")}})
        for c in results.cells]})
    live = figure_data(in_bench_order, "time")
    redrawn = figure_data(results, "time")
    assert live["x_label"] == redrawn["x_label"] == "tokens"
    assert [s["label"] for s in live["series"]] == [s["label"] for s in redrawn["series"]]
    save(results, tmp_path / "again.json")
    assert figure_data(load(tmp_path / "again.json"), "time")["series"] == redrawn["series"]
