"""The steady-state bookkeeping of a run: each round's cell order, the positions and seed
recorded, cells whose rounds disagree flagged `unsteady`, and the marks figures draw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import invoke, nap_bench

from kernbench.execute.options import RunOptions
from kernbench.plan import Cell, round_order
from kernbench.render import gemm_draw, generic_draw
from kernbench.results.model import CellResult, RoundResult, Summary


def _cells(n: int) -> list[Cell]:
    return [Cell(index=i, variant="v", axes={"i": i}, params={"i": i})
            for i in range(n)]


def test_each_round_visits_the_cells_in_its_own_seeded_order() -> None:
    cells = _cells(12)
    first, second = round_order(cells, 7, 1), round_order(cells, 7, 2)
    assert sorted(c.index for c in first) == list(range(12))
    assert [c.index for c in first] != [c.index for c in second]
    assert [c.index for c in round_order(cells, 7, 1)] == [c.index for c in first]  # seeded
    assert [c.index for c in round_order(cells[::-1], None, 1)] == list(range(12))  # plan order


@pytest.mark.slow
def test_a_run_records_its_seed_and_each_rounds_positions(tmp_path: Path) -> None:
    bench = nap_bench(tmp_path / "b", work_us=(1, 2, 3, 4, 5, 6))
    out = tmp_path / "out"
    code, _, err = invoke("run", "--bench", str(bench), "--device", "cpu", "--rounds", "2",
                          "--order-seed", "11", "--no-figures", "--out", str(out))
    assert code == 0, err
    assert RunOptions.model_validate_json((out / "run.json").read_text()).order_seed == 11
    data = json.loads((out / "results.json").read_text())
    assert data["order_seed"] == 11
    for round_ in (1, 2):
        positions = {
            cell["index"]: r["position"]
            for cell in data["cells"] for r in cell["rounds"] if r["round"] == round_
        }
        expected = {c.index: p for p, c in enumerate(round_order(_cells(6), 11, round_))}
        assert positions == expected
    code, _, err = invoke("run", "--bench", str(bench), "--device", "cpu", "--order-seed",
                          "soon", "--out", str(tmp_path / "bad"))
    assert code == 2 and "--order-seed: 'soon' is not an integer or `plan`" in err


def _summary(round_medians: list[float]) -> Summary:
    m = sorted(round_medians)[len(round_medians) // 2]
    return Summary(n=3, median_s=m, mean_s=m, min_s=m, max_s=m, q1_s=m, q3_s=m, iqr_s=0.0,
                   rel_iqr=0.0, ci_low_s=m, ci_high_s=m, ci_coverage=0.95,
                   round_medians_s=round_medians)


def test_a_cell_whose_rounds_disagree_is_flagged_unsteady() -> None:
    from kernbench.results.build import cell_result
    from kernbench.spec.models import Bench

    bench = Bench.model_validate({
        "name": "b", "description": "d", "kernel": "sleep", "axes": {"work_us": [1]},
        "timer": {"steady_tol": 0.03},
    })
    cell = _cells(1)[0]

    def rounds(medians: list[float]) -> list[RoundResult]:
        return [RoundResult(round=i + 1, status="ok", samples_s=[m] * 3, median_s=m)
                for i, m in enumerate(medians)]

    steady = cell_result(bench, cell, rounds([1e-3, 1.02e-3, 1.01e-3]), 3, None)
    assert not steady.unsteady and steady.round_spread == pytest.approx(0.02)
    shaky = cell_result(bench, cell, rounds([1e-3, 1.05e-3, 1.01e-3]), 3, None)
    assert shaky.unsteady and shaky.round_spread == pytest.approx(0.05)


def _bars(figure) -> list:
    return [patch for ax in figure.axes for patch in ax.patches]


def test_unsteady_bars_are_dotted_and_named_in_the_legend() -> None:
    from kernbench.render import figure_data, style
    from kernbench.results.model import load

    results = load(Path(__file__).parent.parent / "benches/data/milestone-1h-gemm.json.xz")
    for cell in results.cells:
        cell.unsteady = False
    plain = figure_data(results, "throughput")
    assert not any(b.get("unsteady") for p in plain["panels"] for b in p["bars"])
    shaky = next(c for c in results.cells if c.status == "ok" and c.variant == "resident")
    shaky.unsteady = True
    data = figure_data(results, "throughput")
    marked = [b for p in data["panels"] for b in p["bars"] if b.get("unsteady")]
    assert len(marked) == 1 and marked[0]["variant"] == "resident"
    figure = gemm_draw.draw({**data, "footnote": "kernbench test"})
    assert sum(patch.get_hatch() == style.UNSTEADY_HATCH for patch in _bars(figure)) == 1
    legend = [text.get_text() for ax in figure.axes if ax.get_legend()
              for text in ax.get_legend().get_texts()]
    assert "unsteady (rounds disagree)" in legend


def test_generic_bars_mark_unsteady_cells() -> None:
    from kernbench.render import series, style

    def cell(i: int, unsteady: bool) -> CellResult:
        return CellResult(id=f"v/op=o{i}", index=i, variant="v", axes={"op": f"o{i}"},
                          params={"op": f"o{i}"}, status="ok", unsteady=unsteady)

    arranged = series.arrange([cell(0, False), cell(1, True)],
                              lambda c: {"value": 1.0, "low": None, "high": None})
    assert [p.get("unsteady", False) for p in arranged["series"][0]["points"]] == [False, True]
    data = {"title": "t", "not_plotted": [], "y_label": "µs", "x_label": "cell", "footnote": "",
            "log_x": False, "log_y": False, "ceiling": None, **arranged}
    figure = generic_draw.draw(data)
    assert style.UNSTEADY_HATCH in [patch.get_hatch() for patch in _bars(figure)]
