from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import pytest
from fixtures_results import FAILED, INVALID, make_gemm_results
from matplotlib.figure import Figure

from kernbench.errors import UserError
from kernbench.render import figure_data, figures_drawn_by, render_results
from kernbench.render.gemm import shape_label
from kernbench.render.style import ordered_stages
from kernbench.results.model import CellResult, load, save
from kernbench.units import seconds_text

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def results():
    return make_gemm_results()


@pytest.fixture(scope="module")
def small():
    """Quick to draw: for tests of where figures go rather than what they show."""
    return make_gemm_results(
        shapes=[(256, 256, 256)], dtypes=["bf16"], variants=["resident", "staged_pinned"]
    )


def _bars(data, dtype):
    (panel,) = [p for p in data["panels"] if p["dtype"] == dtype]
    return {(b["shape"], b["variant"]): b for b in panel["bars"]}


def _cell(results, variant, shape, dtype) -> CellResult:
    (cell,) = [
        c
        for c in results.cells
        if c.variant == variant and shape_label(c) == shape and c.params["dtype"] == dtype
    ]
    return cell


def test_render_writes_each_figure_as_png_with_its_data(results, tmp_path):
    written = render_results(results, tmp_path)
    assert [p.name for p in written] == [f"{name}.png" for name in figures_drawn_by("gemm")]
    for path in written:
        assert path.read_bytes()[:8] == PNG_SIGNATURE
        assert path.stat().st_size > 30_000
        data = json.loads(path.with_suffix(".json").read_text())
        assert data == json.loads(json.dumps(figure_data(results, path.stem)))


def test_rendering_twice_gives_the_same_data_bytes(small, tmp_path):
    render_results(small, tmp_path / "a", ["throughput"])
    render_results(small, tmp_path / "b", ["throughput"])
    first = (tmp_path / "a" / "throughput.json").read_bytes()
    assert first == (tmp_path / "b" / "throughput.json").read_bytes()


def test_throughput_is_flops_over_median_time(results):
    data = figure_data(results, "throughput")
    assert data["unit"] == "TFLOP/s"
    checked = 0
    for dtype in ("bf16", "fp16"):
        for (shape, variant), bar in _bars(data, dtype).items():
            cell = _cell(results, variant, shape, dtype)
            if cell.status != "ok":
                continue
            expected = 2 * cell.params["M"] * cell.params["N"] * cell.params["K"]
            expected /= cell.summary.median_s * 1e12
            assert bar["value"] == pytest.approx(expected, rel=1e-5)
            assert bar["low"] < bar["value"] < bar["high"]
            checked += 1
    assert checked == 30  # 4 variants x 4 shapes x 2 dtypes, less one failed, one invalid


def test_peak_line_comes_from_the_hardware_profile(results):
    panels = {p["dtype"]: p for p in figure_data(results, "throughput")["panels"]}
    assert (panels["bf16"]["peak_tflops"], panels["bf16"]["peak_source"]) == (989.4, "datasheet")
    assert (panels["fp16"]["peak_tflops"], panels["fp16"]["peak_source"]) == (900.0, "measured")


def test_shapes_are_sorted_by_flops_whatever_the_axis_order():
    shuffled = make_gemm_results(shapes=[(4096, 4096, 4096), (64, 64, 64), (4096, 1024, 512)])
    (panel, *_) = figure_data(shuffled, "throughput")["panels"]
    assert panel["shapes"] == ["64x64x64", "4096x1024x512", "4096x4096x4096"]


def test_under_tile_shapes_are_flagged(results):
    bars = _bars(figure_data(results, "utilization"), "bf16")
    flagged = {shape for (shape, _), bar in bars.items() if bar["under_tile"]}
    assert flagged == {"64x64x64"}


def test_failed_and_invalid_cells_are_listed_not_drawn(results):
    data = figure_data(results, "throughput")
    listed = {(entry["status"], entry["reason"]) for entry in data["not_plotted"]}
    assert listed == {("failed", FAILED[3]), ("invalid", INVALID[3])}
    variant, (m, n, k), dtype, _ = FAILED
    bar = _bars(data, dtype)[(f"{m}x{n}x{k}", variant)]
    assert (bar["status"], bar["value"]) == ("failed", None)


def test_utilization_is_the_util_metric_in_percent(results):
    bars = _bars(figure_data(results, "utilization"), "fp16")
    cell = _cell(results, "resident", "4096x4096x4096", "fp16")
    assert bars[("4096x4096x4096", "resident")]["value"] == pytest.approx(
        100 * cell.metrics["util"], rel=1e-5
    )


def test_theory_vs_measured_pairs_model_and_measured_utilization(results):
    bars = _bars(figure_data(results, "theory_vs_measured"), "bf16")
    cell = _cell(results, "staged_pinned", "8192x8192x8192", "bf16")
    bar = bars[("8192x8192x8192", "staged_pinned")]
    assert bar["model"] == pytest.approx(100 * cell.metrics["model_util"], rel=1e-5)
    assert bar["value"] == pytest.approx(100 * cell.metrics["util"], rel=1e-5)
    assert bar["of_model"] == pytest.approx(cell.metrics["util"] / cell.metrics["model_util"], 1e-2)
    assert 0 < bar["of_model"] < 1


def test_stage_breakdown_shows_staged_variants_in_pipeline_order(results, tmp_path):
    # Saved results have sorted keys (d2h, gemm, h2d); the figure must not follow them.
    save(results, tmp_path / "results.json")
    data = figure_data(load(tmp_path / "results.json"), "stage_breakdown")
    assert data["stages"] == ["h2d", "gemm", "d2h"]
    assert {(p["variant"], p["dtype"]) for p in data["panels"]} == {
        (v, d) for v in ("staged_pinned", "staged_pageable") for d in ("bf16", "fp16")
    }
    for panel in data["panels"]:
        for bar in panel["bars"]:
            assert sum(bar["percent"].values()) == pytest.approx(100, abs=0.01)
            assert bar["total_s"] == pytest.approx(sum(bar["stages_s"].values()), rel=1e-5)


def test_pinned_staging_copies_take_less_time_than_pageable(results):
    panels = {p["variant"]: p for p in figure_data(results, "stage_breakdown")["panels"]}
    pinned = panels["staged_pinned"]["bars"][-1]["stages_s"]["h2d"]
    pageable = panels["staged_pageable"]["bars"][-1]["stages_s"]["h2d"]
    assert pinned == pytest.approx(pageable / 2, rel=1e-4)


def test_a_run_without_staged_variants_gets_an_explaining_figure(tmp_path):
    resident = make_gemm_results(variants=["resident", "triton"])
    data = figure_data(resident, "stage_breakdown")
    assert data["panels"] == [] and "No staged variant" in data["note"]
    (path,) = render_results(resident, tmp_path, ["stage_breakdown"])
    assert path.read_bytes()[:8] == PNG_SIGNATURE


def test_without_a_hardware_profile_utilization_explains_itself(tmp_path):
    bare = make_gemm_results(hardware=False, shapes=[(1024, 1024, 1024)])
    data = figure_data(bare, "utilization")
    assert data["panels"] == [] and "no hardware profile" in data["note"]
    assert all(p["peak_tflops"] is None for p in figure_data(bare, "throughput")["panels"])
    written = render_results(bare, tmp_path)
    assert len(written) == 4 and all(p.stat().st_size > 10_000 for p in written)


def test_a_run_where_every_cell_failed_still_renders(tmp_path):
    broken = make_gemm_results(shapes=[(256, 256, 256)], dtypes=["bf16"])
    for cell in broken.cells:
        cell.status, cell.reason, cell.summary, cell.metrics = "failed", "timeout", None, {}
        cell.stages_s = {}
    written = render_results(broken, tmp_path)
    assert len(written) == 4
    data = figure_data(broken, "throughput")
    assert len(data["not_plotted"]) == 4 and "every cell failed" in data["note"]


def test_footnote_carries_provenance(results):
    footnote = figure_data(results, "throughput")["footnote"]
    for part in ("NVIDIA H200", "gpu-node-07", "2026-11-20 09:30", "3f9a1c77e0b2", "3 rounds"):
        assert part in footnote
    assert "46c26f4c1d" in footnote


def test_unknown_figure_names_are_refused(results, tmp_path):
    with pytest.raises(UserError, match=r"unknown figure 'thruput'; known: throughput, "):
        render_results(results, tmp_path, ["thruput"])
    with pytest.raises(UserError, match="unknown figure 'bogus'"):
        figure_data(results, "bogus")


def test_default_figures_come_from_the_spec(small, tmp_path):
    narrowed = small.model_copy(
        update={"spec": {**small.spec, "figures": ["utilization", "utilization"]}}
    )
    assert [p.name for p in render_results(narrowed, tmp_path)] == ["utilization.png"]


def test_each_figure_goes_to_the_renderer_the_registry_names(results, tmp_path, monkeypatch):
    calls = []
    fake = types.ModuleType("kernbench.render.ccl")
    fake.figure_data = lambda results, name: calls.append(name) or {"figure": name}  # type: ignore[attr-defined]
    fake.draw = lambda data: Figure()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kernbench.render.ccl", fake)
    written = render_results(results, tmp_path, ["latency", "utilization", "busbw"])
    assert calls == ["latency", "busbw"]
    assert [p.name for p in written] == ["latency.png", "utilization.png", "busbw.png"]


def test_a_missing_ccl_renderer_is_a_clear_error(results, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "kernbench.render.ccl", None)
    with pytest.raises(UserError, match="need kernbench.render.ccl"):
        render_results(results, tmp_path, ["busbw"])


def test_cells_without_mnk_are_labelled_by_their_axes():
    cell = CellResult(
        id="x",
        index=0,
        variant="v",
        axes={"size": [4, 8], "dtype": "bf16"},
        params={"size": [4, 8], "dtype": "bf16"},
        status="pending",
    )
    assert shape_label(cell) == "4x8"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(2.5, "2.5 s"), (0.00222, "2.22 ms"), (1.27e-6, "1.27 µs"), (7.71e-7, "771 ns")],
)
def test_durations_get_a_readable_unit(seconds, text):
    assert seconds_text(seconds) == text


def test_stages_follow_the_pipeline_then_their_names():
    assert ordered_stages(["d2h", "zeta", "gemm", "alpha", "h2d"]) == [
        "h2d",
        "gemm",
        "d2h",
        "alpha",
        "zeta",
    ]


def test_paths_are_pathlib(small, tmp_path):
    (path,) = render_results(small, str(tmp_path), ["utilization"])  # type: ignore[arg-type]
    assert isinstance(path, Path) and path.parent == tmp_path


def test_bar_labels_are_plain_numbers_without_exponents() -> None:
    # fp8 on the committed H200 data reaches 1537 TFLOP/s, which `.3g` wrote as 1.54e+03.
    from kernbench.render.gemm_draw import draw

    data = Path(__file__).resolve().parent.parent / "benches/data/milestone-1h-gemm.json.xz"
    results = load(data)
    figure = draw(figure_data(results, "throughput"))
    labels = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert "1537" in labels
    assert not [label for label in labels if "e+" in label or "e-" in label]


def test_an_unsteady_staged_cell_is_marked_in_the_stage_breakdown_too():
    from kernbench.render.gemm_draw import draw

    results = make_gemm_results(
        shapes=[(256, 256, 256), (512, 512, 512)], dtypes=["bf16"], variants=["staged_pinned"]
    )
    results.cells[1].unsteady = True
    data = figure_data(results, "stage_breakdown")
    assert [bool(b.get("unsteady")) for b in data["panels"][0]["bars"]] == [False, True]
    figure = draw(data)
    ax = figure.axes[0]
    hatched = {round(p.get_x() + p.get_width() / 2) for p in ax.patches
               if "..." in (p.get_hatch() or "")}
    assert hatched == {1}  # every stage of the second bar, none of the first
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "unsteady (rounds disagree)" in labels


@pytest.mark.parametrize(("name", "line"), [("utilization", "100%"), ("throughput", "dotted line"),
                                            ("theory_vs_measured", "100%")])
def test_each_panel_title_names_the_peak_its_line_stands_for(small, name, line):
    # On the line itself, the label ran into the value labels of the tallest bars.
    from kernbench.render.gemm_draw import draw

    data = figure_data(small, name)
    (panel,) = data["panels"]
    ax = draw(data).axes[0]
    peak = f"{panel['peak_tflops']:.4g}"
    assert ax.get_title(loc="left") == (
        f"dtype bf16  ·  {line} = peak {peak} TFLOP/s ({panel['peak_source']})")
    assert not [t for t in ax.texts if "peak" in t.get_text()]


def test_an_unsteady_bar_is_ringed_above_where_its_dots_would_not_show():
    # A staged bf16 GEMM at 2% utilization is a few pixels tall: its dots are invisible.
    from kernbench.render.gemm_draw import draw

    results = make_gemm_results(
        shapes=[(256, 256, 256)], dtypes=["bf16"], variants=["resident", "staged_pinned"]
    )
    (staged,) = [c for c in results.cells if c.variant == "staged_pinned"]
    staged.unsteady = True
    ax = draw(figure_data(results, "utilization")).axes[0]
    rings = [line for line in ax.get_lines()
             if line.get_marker() == "o" and line.get_fillstyle() == "none"]
    (bar,) = [p for p in ax.patches if "..." in (p.get_hatch() or "")]
    assert [list(r.get_xdata()) for r in rings] == [[bar.get_x() + bar.get_width() / 2]]
    assert list(rings[0].get_ydata()) == [max(bar.get_height(), _high(ax, bar))]


def _high(ax, bar) -> float:
    """The top of the whisker drawn on `bar`."""
    x = bar.get_x() + bar.get_width() / 2
    tops = [segment[:, 1].max() for collection in ax.collections
            for segment in collection.get_segments() if abs(segment[0, 0] - x) < 1e-9]
    return max(tops)


def test_an_unsteady_ring_sits_above_the_whisker_not_on_it():
    # On a shared 2-core CPU the rounds disagree by 50% and the whisker reaches far above
    # the bar (a fresh CPU run's throughput.png): the ring sat on the whisker.
    from kernbench.render.gemm_draw import draw

    results = make_gemm_results(shapes=[(256, 256, 256)], dtypes=["bf16"],
                                variants=["resident"])
    (cell,) = results.cells
    cell.unsteady = True
    cell.summary.ci_low_s = cell.summary.median_s * 0.6
    ax = draw(figure_data(results, "throughput")).axes[0]
    (ring,) = [line for line in ax.get_lines()
               if line.get_marker() == "o" and line.get_fillstyle() == "none"]
    (bar,) = [p for p in ax.patches if "..." in (p.get_hatch() or "")]
    assert _high(ax, bar) > bar.get_height() * 1.5
    assert ring.get_ydata()[0] == pytest.approx(_high(ax, bar))


REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["throughput", "stage_breakdown"])
def test_slanted_shape_labels_do_not_run_into_each_other(name):
    # The committed sweep's 17 shapes: in the stage breakdown's narrower panels, labels
    # slanted at 25 degrees overlapped their neighbours ("2048x4096x40964096x4096x4096").
    from kernbench.render.gemm_draw import draw

    results = load(REPO / "benches" / "data" / "milestone-1h-gemm.json.xz")
    figure = draw(figure_data(results, name))
    figure.canvas.draw()
    for ax in figure.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        if len(labels) < 2:
            continue
        xs = [ax.transData.transform((x, 0))[0] for x in ax.get_xticks()]
        spacing = min(b - a for a, b in zip(xs, xs[1:], strict=False))
        angle = math.radians(labels[0].get_rotation())
        line_px = 1.3 * labels[0].get_fontsize() * figure.dpi / 72  # a line, with air
        # The distance between two neighbouring slanted baselines, against a line's height.
        gap = spacing * (math.sin(angle) if angle else 1.0)
        assert gap >= line_px, (ax.get_title(), labels[0].get_rotation(), gap, line_px)


@pytest.mark.parametrize("committed", [True, False])
def test_the_stage_totals_stand_clear_of_the_panel_frame(committed, results):
    # Upright totals ("1.01 ms") reached the frame's top line to within half a pixel.
    from kernbench.render.gemm_draw import draw

    if committed:  # 17 shapes: upright totals; the fixture's few lie flat
        results = load(REPO / "benches" / "data" / "milestone-1h-gemm.json.xz")
    figure = draw(figure_data(results, "stage_breakdown"))
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for ax in figure.axes:
        top = ax.get_window_extent(renderer).y1
        assert all(top - text.get_window_extent(renderer).y1 >= 3 for text in ax.texts)


def test_the_legend_says_what_the_whiskers_are(small):
    from kernbench.render.gemm_draw import draw
    from kernbench.render.style import WHISKER_LABEL

    legend = draw(figure_data(small, "throughput")).axes[0].get_legend()
    assert WHISKER_LABEL in [text.get_text() for text in legend.get_texts()]


def test_bar_labels_fit_by_the_bars_width_in_points_not_their_count() -> None:
    # The committed bf16 panel: 17 shapes x 4 variants = 68 bars, each ~12 pt wide at 16 in,
    # room enough for an upright 6.5 pt label; a fixed count of 48 left them all out.
    from kernbench.render.gemm_draw import draw, labels_fit

    data = Path(__file__).resolve().parent.parent / "benches/data/milestone-1h-gemm.json.xz"
    figure_input = figure_data(load(data), "throughput")
    (bf16,) = [p for p in figure_input["panels"] if p["dtype"] == "bf16"]
    assert len(bf16["bars"]) == 68
    assert labels_fit(bf16, 16.0)
    assert not labels_fit(bf16, 7.0)  # the same bars squeezed to 7 in are ~5 pt wide
    crowded = {"shapes": [str(i) for i in range(60)], "variants": ["a", "b", "c", "d"]}
    assert not labels_fit(crowded, 16.0)
    figure = draw(figure_input)
    ax = next(ax for ax in figure.axes if ax.get_title(loc="left").startswith("dtype bf16"))
    assert len([t for t in ax.texts if t.get_text()]) >= 60


CPU_VARIANTS = {"cpu_numpy": {"backend": "numpy", "staging": "resident"},
                "cpu_blocked": {"backend": "numpy", "staging": "resident", "autotune": True},
                "cpu_staged": {"backend": "numpy", "staging": "staged", "host": "pinned"}}
SWEEP = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
         (4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (2048, 512, 1024),
         (512, 2048, 2048), (1024, 256, 2048), (4096, 4096, 1024), (8192, 1024, 8192),
         (1024, 8192, 4096), (2048, 4096, 4096), (2048, 14336, 4096), (2048, 4096, 14336),
         (16, 4096, 4096)]


def _cpu_results(monkeypatch, shapes, dtypes, broken: dict[str, str]):
    """The CPU variants over `shapes`, the variants in `broken` failed or invalid."""
    import fixtures_results

    for name, params in CPU_VARIANTS.items():
        monkeypatch.setitem(fixtures_results.VARIANTS, name, params)
    results = make_gemm_results(shapes=shapes, dtypes=dtypes, variants=tuple(CPU_VARIANTS),
                                failed=False)
    cells = [c if c.variant not in broken else CellResult(
        id=c.id, index=c.index, variant=c.variant, axes=c.axes, params=c.params, tile=c.tile,
        under_tile=c.under_tile, status=broken[c.variant], reason="boom") for c in results.cells]
    return results.model_copy(update={"cells": cells})


def _overlapping_texts(figure: Figure) -> list[tuple[str, str]]:
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    found = []
    for ax in figure.axes:
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
                 if t.get_text().strip()]
        found += [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:]
                  if box.overlaps(other)]
    return found


@pytest.mark.parametrize(
    ("shapes", "dtypes", "broken"),
    [(17, ["fp32"], {"cpu_blocked": "failed", "cpu_staged": "failed"}),
     (6, ["bf16"], {"cpu_blocked": "failed", "cpu_staged": "failed"}),
     (17, ["bf16"], {"cpu_staged": "invalid"})],
)
def test_a_missing_bars_reason_does_not_run_into_its_neighbours(
    monkeypatch, shapes, dtypes, broken
):
    # A failed cpu_staged cell's "×\nfailed", 7 pt across, ran into the mark of the failed
    # cpu_blocked beside it, and an invalid one's into the value label of the next bar:
    # the reason is drawn where it clears them, the × alone where it does not.
    from kernbench.render.gemm_draw import draw

    results = _cpu_results(monkeypatch, SWEEP[:shapes], dtypes, broken)
    figure = draw(figure_data(results, "throughput"))
    assert _overlapping_texts(figure) == []
    marks = [t.get_text() for ax in figure.axes for t in ax.texts if "×" in t.get_text()]
    assert len(marks) == shapes * len(broken) * len(dtypes)


def test_a_missing_bars_reason_stays_where_there_is_room(monkeypatch):
    from kernbench.render.gemm_draw import draw

    results = _cpu_results(monkeypatch, SWEEP[:3], ["fp32"], {"cpu_staged": "invalid"})
    figure = draw(figure_data(results, "throughput"))
    assert _overlapping_texts(figure) == []
    assert [t.get_text() for t in figure.axes[0].texts if "×" in t.get_text()] == [
        "×\ninvalid"] * 3
