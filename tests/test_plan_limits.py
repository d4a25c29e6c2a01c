"""The cell-count cap, cells built one at a time with `--only` applied while they are
built, and `--only` on a compound axis as the plan shows it (issues 12 and 14)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench import plan as plan_module
from kernbench.errors import EXIT_OK, EXIT_USAGE, SpecError, UserError
from kernbench.plan import iter_cells, plan, select
from kernbench.spec.loader import load_bench
from kernbench.spec.models import MAX_CELLS, Bench

runner = CliRunner()


def bench(**fields: Any) -> Bench:
    return Bench.model_validate({"name": "b", "description": "d", "kernel": "sleep", **fields})


def ten_axes(count: int) -> str:
    """A bench file of `count` axes sharing one ten-value list (10**count cells)."""
    names = "abcdefghijklmnop"[:count]
    axes = "\n".join(f"  {name}: *ten" if i else f"  {name}: &ten [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
                     for i, name in enumerate(names))
    return f"name: wide\ndescription: d\nkernel: sleep\naxes:\n{axes}\n"


def test_the_cap_is_checked_before_any_cell_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A billion cells built one by one would hang the test, not fail it: building any
    # cell, or any row of the axes' product, fails it instead.
    def built(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("a cell was built before the cap was checked")

    monkeypatch.setattr(plan_module, "_axis_rows", built)
    monkeypatch.setattr(plan_module, "Cell", built)
    with pytest.raises(AssertionError, match="a cell was built"):  # the patch bites
        list(iter_cells(bench(axes={"a": [1]})))
    path = tmp_path / "wide.yaml"
    path.write_text(ten_axes(9))
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert str(info.value) == (
        f"{path}:4: axes: 1000000000 cells before exclusions, more than the 100000 a bench "
        "may have; split it or shorten an axis"
    )
    wide = bench(axes={f"a{i}": list(range(10)) for i in range(9)})  # the model's own cap
    with pytest.raises(UserError, match="1000000000 cells before exclusions"):
        plan(wide)


def test_plan_refuses_a_bench_over_the_cap() -> None:
    spec = bench(axes={"a": list(range(1000)), "b": list(range(101))})
    with pytest.raises(UserError) as info:
        plan(spec)
    assert str(info.value) == (
        "b: 101000 cells before exclusions, more than the 100000 a bench may have; "
        "split it or shorten an axis"
    )


def test_zip_groups_and_variants_count_once_each() -> None:
    spec = bench(
        axes={"a": [1, 2, 3], "b": [4, 5, 6], "c": [0, 1]},
        zip=[["a", "b"]],
        variants={"v": {}, "w": {}},
        dtypes=["fp32", "bf16"],
    )
    assert spec.cell_count_bound() == 3 * 2 * 2 * 2 == len(plan(spec))


def test_plan_and_validate_of_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = Path("wide.yaml")
    path.write_text(ten_axes(5) + "metrics:\n  flops: a*b*c*d*e\n")
    result = runner.invoke(cli.app, ["plan", "--bench", str(path), "--device", "cpu"])
    assert result.exit_code == EXIT_OK, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"bench wide ({path}) on cpu: {MAX_CELLS} cells"
    assert "... 99000 more cells not shown (narrow with --only)" in lines
    assert runner.invoke(cli.app, ["validate", str(path)]).exit_code == EXIT_OK


def test_only_is_applied_while_the_cells_are_built() -> None:
    spec = bench(axes={"a": list(range(100)), "b": list(range(100))}, variants={"v": {}, "w": {}})
    cells = iter_cells(spec, "cpu", ["variant=w", "b=7"])
    first = next(cells)
    assert (first.id, first.index) == ("w/a=0,b=7", 10_007)
    assert len(list(cells)) == 99
    with pytest.raises(UserError, match=r"^--only: unknown key 'z'; known: a, b, device"):
        next(iter_cells(spec, "cpu", ["z=1"]))
    with pytest.raises(UserError, match=r"^--only: no cell has a=1000; a takes 0, 1, 2, 3, 4, "
                       r"5, 6, 7, 8, 9, 10, 11 and 88 more$"):
        plan(spec, "cpu", ["a=1000"])


def test_only_selects_a_compound_axis_as_the_plan_shows_it() -> None:
    spec = bench(
        axes={"shape": [{"M": 256, "N": 256, "K": 256}, {"M": 512, "N": 256, "K": 64}],
              "tile": [[16, 16], [32, 8]]},
    )
    chosen = plan(spec, None, ["shape=256x256x256"])
    assert [c.id for c in chosen] == [
        "default/shape=256x256x256,tile=16x16", "default/shape=256x256x256,tile=32x8",
    ]  # fmt: skip
    assert [c.id for c in select(plan(spec), ["shape=512x256x64", "tile=32x8"])] == [
        "default/shape=512x256x64,tile=32x8"
    ]
    assert [c.index for c in select(plan(spec), ["M=512"])] == [2, 3]


def test_plan_command_takes_a_compound_axis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = Path("g.yaml")
    path.write_text(
        "name: g\ndescription: d\nkernel: sleep\n"
        "axes:\n  shape: [{M: 256, N: 256, K: 256}, {M: 64, N: 64, K: 64}]\n"
    )
    result = runner.invoke(
        cli.app, ["plan", "--bench", str(path), "--device", "cpu", "--only", "shape=256x256x256"]
    )
    assert result.exit_code == EXIT_OK, result.output
    assert result.stdout.splitlines()[0] == f"bench g ({path}) on cpu: 1 cell"
    result = runner.invoke(
        cli.app, ["plan", "--bench", str(path), "--device", "cpu", "--only", "shape=1x1x1"]
    )
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE, "--only: no cell has shape=1x1x1; shape takes 256x256x256, 64x64x64\n"
    )


def test_cells_are_the_same_as_the_full_product() -> None:
    spec = bench(
        axes={"n": [1, 2, 3], "m": ["p", "q"]},
        variants={"v": {}, "w": {"x": 1}},
        exclude=[{"variant": "w", "n": 2}],
    )
    expected = [
        (v, n, m)
        for v, n, m in itertools.product(["v", "w"], [1, 2, 3], ["p", "q"])
        if not (v == "w" and n == 2)
    ]
    cells = plan(spec)
    assert [(c.variant, c.params["n"], c.params["m"]) for c in cells] == expected
    assert [c.index for c in cells] == list(range(len(expected)))
