from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_results import summary

from kernbench.analyze.collective import END_SIZES, bandwidths
from kernbench.plan import cell_id
from kernbench.render import render_results
from kernbench.render.ccl import draw, figure_data
from kernbench.results.model import CellResult, Results, collective_fits, load
from kernbench.spec.models import Bench

OPS = ("allreduce", "allgather")
SIZES = [2**p for p in range(10, 31, 2)]  # 1 KiB .. 1 GiB
REPO = Path(__file__).resolve().parent.parent
ALPHA_S, BETA = {"allreduce": 20e-6, "allgather": 12e-6}, {"allreduce": 160e9, "allgather": 300e9}
COMMITTED = Path(__file__).resolve().parent.parent / "benches/data/milestone-1h-ccl.json"


def committed_results() -> Results:
    """The committed H200 sweep (benches/data/milestone-1h-ccl.json)."""
    from kernbench.results.model import load

    return load(COMMITTED)


def make_ccl_results(failed: bool = True, ok: bool = True) -> Results:
    spec = Bench.model_validate(
        {
            "name": "milestone-1h-ccl",
            "description": "collectives",
            "kernel": "collective",
            "axes": {"op": list(OPS), "world_size": [2], "bytes": SIZES, "dtype": ["bf16"]},
            "metrics": {"bytes": "bytes"},
            "model": "alpha_beta",
            "figures": ["busbw", "latency"],
        }
    ).model_dump(mode="json")
    cells = []
    for op in OPS:
        for size in SIZES:
            axes = {"op": op, "world_size": 2, "bytes": size, "dtype": "bf16"}
            common = {
                "id": cell_id("default", axes),
                "index": len(cells),
                "variant": "default",
                "axes": axes,
                "params": {**axes, "device": "cuda"},
            }
            if (failed and op == "allgather" and size == SIZES[-1]) or not ok:
                cells.append(CellResult(status="failed", reason="out of memory", **common))
                continue
            median = ALPHA_S[op] + size / BETA[op]
            metrics = {"bytes": float(size), **bandwidths(op, size, 2, median)}
            cells.append(
                CellResult(status="ok", summary=summary(median, [median] * 3, 9),
                           metrics=metrics, **common)
            )
    return Results(
        bench="milestone-1h-ccl",
        spec_hash="c0ffee00c0ffee00",
        spec=spec,
        created_utc="2026-11-20T09:30:12Z",
        complete=True,
        device="cuda",
        rounds=3,
        provenance={"device_name": "NVIDIA H200", "host": "gpu-node-07"},
        cells=cells,
        fits=collective_fits(cells),
    )


def test_render_writes_both_figures_with_their_data(tmp_path: Path) -> None:
    written = render_results(make_ccl_results(), tmp_path, ["busbw", "latency"])
    assert [p.name for p in written] == ["busbw.png", "latency.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 10_000
        assert json.loads(path.with_suffix(".json").read_text())["figure"] == path.stem


def test_figure_data_skips_failed_cells_and_fits_the_model() -> None:
    data = figure_data(make_ccl_results(), "busbw")
    assert [p["op"] for p in data["panels"]] == list(OPS)
    assert [c["cell"] for c in data["not_plotted"]] == [
        "default/op=allgather,world_size=2,bytes=1073741824,dtype=bf16"
    ]
    allgather = data["panels"][1]["series"][0]
    assert allgather["bytes"] == SIZES[:-1]
    assert allgather["label"] == "n=2 bf16 in-place"
    model = allgather["model"]
    assert model["alpha_s"] == pytest.approx(ALPHA_S["allgather"], rel=1e-4)
    assert model["beta_gbs"] == pytest.approx(BETA["allgather"] / 1e9, rel=1e-4)


def test_the_model_is_fitted_from_the_cells_not_read_from_the_stored_fits() -> None:
    # Stored fits made by an older method (ADR 0047 addendum) are a record, never drawn.
    results = make_ccl_results()
    results.fits["allreduce n=2 bf16 in-place"].alpha_s = 1e-3
    del results.fits["allgather n=2 bf16 in-place"]
    allreduce, allgather = (
        panel["series"][0] for panel in figure_data(results, "latency")["panels"]
    )
    assert allreduce["model"]["alpha_s"] == pytest.approx(ALPHA_S["allreduce"], rel=1e-4)
    assert allgather["model"]["alpha_s"] == pytest.approx(ALPHA_S["allgather"], rel=1e-4)


def test_the_committed_sweeps_model_meets_its_own_smallest_times() -> None:
    # Its stored fits predate ADR 0047 (α 7.66 µs against 6.78 µs measured at 1 KiB).
    data = figure_data(load(REPO / "benches/data/milestone-1h-ccl.json"), "latency")
    for panel in data["panels"]:
        for series in panel["series"]:
            smallest = sorted(series["latency_s"][:END_SIZES])[END_SIZES // 2]
            assert series["model"]["alpha_s"] == pytest.approx(smallest, rel=0.01), series["label"]


def test_bus_bandwidth_uses_the_collective_factor() -> None:
    series = figure_data(make_ccl_results(), "busbw")["panels"][0]["series"][0]
    # allreduce over two ranks: busbw = 2(n-1)/n algbw = algbw.
    assert series["busbw_gbs"] == series["algbw_gbs"]
    big = 2**30
    expected = big / (ALPHA_S["allreduce"] + big / BETA["allreduce"]) / 1e9
    assert series["busbw_gbs"][-1] == pytest.approx(expected, rel=1e-5)


def test_nothing_finished_draws_a_placeholder(tmp_path: Path) -> None:
    results = make_ccl_results(ok=False)
    data = figure_data(results, "latency")
    assert data["panels"] == [] and "nothing to plot" in data["note"]
    (path,) = render_results(results, tmp_path, ["latency"])
    assert path.stat().st_size > 0


def test_reference_points_join_their_series_and_the_legend(tmp_path: Path) -> None:
    from cli_helpers import invoke

    from kernbench.render.ccl import REFERENCE_MARKERS, with_references
    from kernbench.results.reference import Reference, ReferencePoint

    results = committed_results()
    point = {"op": "allreduce", "inplace": True, "dtype": "bf16", "world_size": 2}
    graph = Reference(source="nccl-tests -G", points=[
        ReferencePoint(**point, bytes=4096, time_s=6e-6),
        ReferencePoint(**point, bytes=1024, time_s=5e-6),
        ReferencePoint(**{**point, "dtype": "fp64"}, bytes=1024, time_s=5e-6),  # no series
    ])
    eager = Reference(source="nccl-tests", points=[
        ReferencePoint(**point, bytes=1024, time_s=7e-6),
        ReferencePoint(**{**point, "dtype": "fp32"}, bytes=1024, time_s=7e-6),
    ])
    data = with_references(figure_data(results, "latency"), [graph, eager])
    assert data["reference_sources"] == ["nccl-tests -G", "nccl-tests"]
    allreduce = next(p for p in data["panels"] if p["op"] == "allreduce")
    shown = {s["label"]: s.get("references") for s in allreduce["series"]}
    bf16 = next(refs for label, refs in shown.items() if "bf16" in label)
    assert [r["source"] for r in bf16] == ["nccl-tests -G", "nccl-tests"]
    assert bf16[0]["bytes"] == [1024.0, 4096.0] and bf16[0]["latency_s"] == [5e-6, 6e-6]
    expected = bandwidths("allreduce", 1024, 2, 5e-6)["busbw_gbs"]
    assert bf16[0]["busbw_gbs"][0] == pytest.approx(expected)
    # Each reference keeps its marker, also in a series another reference misses.
    assert [r["marker"] for r in bf16] == list(REFERENCE_MARKERS[:2])
    fp32 = next(refs for label, refs in shown.items() if "fp32" in label)
    assert [(r["source"], r["marker"]) for r in fp32] == [("nccl-tests", REFERENCE_MARKERS[1])]
    file, other = tmp_path / "ref.json", tmp_path / "eager.json"
    file.write_text(graph.model_dump_json())
    other.write_text(eager.model_dump_json())
    code, out, err = invoke("render", str(COMMITTED), "--out", str(tmp_path / "figs"),
                            "--reference", str(file), "--reference", str(other))
    assert code == 0, err
    drawn = json.loads((tmp_path / "figs" / "latency.json").read_text())
    assert drawn["reference_sources"] == ["nccl-tests -G", "nccl-tests"]
    file.write_text('{"source": "x", "points": [{"op": "allreduce"}]}')
    code, _, err = invoke("render", str(COMMITTED), "--out", str(tmp_path / "f2"),
                          "--reference", str(file))
    assert code == 2 and "ref.json" in err and "\n" not in err.strip()


def test_unsteady_cells_are_ringed_and_named_in_the_legend(tmp_path: Path) -> None:
    results = make_ccl_results(failed=False)
    assert "unsteady" not in figure_data(results, "busbw")["panels"][0]["series"][0]
    results.cells[1].unsteady = True
    for name in ("busbw", "latency"):
        allreduce = figure_data(results, name)["panels"][0]["series"][0]
        assert allreduce["unsteady"] == [i == 1 for i in range(len(SIZES))]
    figure = draw(figure_data(results, "latency"))
    labels = [text.get_text() for legend in figure.legends + [
        ax.get_legend() for ax in figure.axes if ax.get_legend()] for text in legend.get_texts()]
    assert "unsteady (rounds disagree)" in labels


@pytest.mark.parametrize("name", ["busbw", "latency"])
def test_the_fit_box_covers_no_measured_or_modelled_point(name: str) -> None:
    # The committed H200 data: in allgather the flattened algbw lines ran under the box;
    # with β's busbw beside β, reduce_scatter's line from 1 to 2 KiB ran over its corner
    # (at the saved resolution: text and lines scale apart, so measure there, and along
    # each segment, not only at the points).
    import numpy as np

    from kernbench.render.style import DPI
    results = committed_results()
    figure = draw(figure_data(results, name))
    figure.set_dpi(DPI)
    figure.canvas.draw()
    assert len(figure.axes) == 3
    steps = np.linspace(0, 1, 20)[:, None]
    for ax in figure.axes:
        (box,) = [t for t in ax.texts if "α=" in t.get_text()]
        extent = box.get_bbox_patch().get_window_extent()
        for line in ax.get_lines():
            points = line.get_transform().transform(line.get_xydata())
            along = [a + steps * (b - a) for a, b in zip(points, points[1:], strict=False)]
            for x, y in np.vstack([points, *along]):
                assert not extent.contains(x, y), f"{ax.get_title()}: {line} under the box"


def test_busbw_is_drawn_against_the_interconnect_bandwidth_of_the_profile() -> None:
    results = committed_results()
    data = figure_data(results, "busbw")
    assert data["ceiling"] == {"label": "interconnect per GPU, one way",
                               "value": 450.0, "source": "datasheet"}
    assert "ceiling" not in figure_data(results, "latency")
    assert "ceiling" not in figure_data(make_ccl_results(), "busbw")  # no hardware profile
    for ax in draw(data).axes:
        assert ax.get_ylim()[1] > 450.0
        assert ("interconnect per GPU, one way: 450 GB/s (datasheet)"
                in [t.get_text() for t in ax.texts])


def test_the_bandwidth_fit_box_gives_beta_in_busbw_too_where_it_differs() -> None:
    # β is message bytes a second: an allgather of 2 GPUs at β 472 GB/s moves 236 GB/s of
    # busbw, the number the figure's lines and the link's ceiling are in.
    data = figure_data(make_ccl_results(), "busbw")
    allgather = data["panels"][1]["series"][0]["model"]
    assert allgather["beta_busbw_gbs"] == pytest.approx(allgather["beta_gbs"] / 2, rel=1e-5)
    boxes = {ax.get_title(): " ".join(t.get_text() for t in ax.texts)
             for ax in draw(data).axes}
    assert f"(busbw {allgather['beta_busbw_gbs']:.3g})" in boxes["allgather"]
    assert "busbw" not in boxes["allreduce"]  # 2 GPUs: an allreduce's busbw is its algbw
    latency = draw(figure_data(make_ccl_results(), "latency"))
    assert all("busbw" not in t.get_text() for ax in latency.axes for t in ax.texts)



def test_reference_points_outside_a_series_sizes_are_left_out() -> None:
    # docs/collectives/direct: an 8 MiB to 1 GiB sweep against nccl-tests from 1 KiB; the
    # unseen small-message points took the latency axis down a decade below the data.
    from kernbench.render.ccl import with_references
    from kernbench.results.reference import Reference, ReferencePoint

    results = make_ccl_results(failed=False)
    data = figure_data(results, "latency")
    allreduce = data["panels"][0]["series"][0]
    point = {"op": "allreduce", "inplace": allreduce["inplace"], "dtype": allreduce["dtype"],
             "world_size": allreduce["world_size"]}
    low, high = min(allreduce["bytes"]), max(allreduce["bytes"])
    reference = Reference(source="nccl-tests", points=[
        ReferencePoint(**point, bytes=int(low) // 2, time_s=1e-9),
        ReferencePoint(**point, bytes=int(low), time_s=allreduce["latency_s"][0]),
        ReferencePoint(**point, bytes=int(high) * 2, time_s=1.0),
    ])
    data = with_references(data, [reference])
    (shown,) = data["panels"][0]["series"][0]["references"]
    assert shown["bytes"] == [low]
    ax = draw(data).axes[0]
    assert ax.get_ylim()[0] > 1e-9 * 1e6 * 10


@pytest.mark.parametrize("name", ["busbw", "latency"])
def test_series_that_coincide_all_show(name: str) -> None:
    # fp32 and bf16 of one op lie on each other: drawn the same size, the first vanished
    # under the second (the committed allreduce panel showed one line of two).
    results = committed_results()
    data = figure_data(results, name)
    for ax, panel in zip(draw(data).axes, data["panels"], strict=False):
        measured = [line for line in ax.get_lines() if line.get_marker() == "o"
                    and line.get_fillstyle() == "full" and len(line.get_xdata()) > 2]
        sizes = [line.get_markersize() for line in measured]
        assert len(sizes) == len(panel["series"]) > 1
        assert sizes == sorted(set(sizes), reverse=True)  # each drawn over the last, smaller
