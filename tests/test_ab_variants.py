"""`kernbench ab --switch variant`: side A times one variant, side B another, cell by cell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ab_fixtures.build import results
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.pairing import as_pair, pair_cells
from kernbench.ab.run import resume_ab, run_ab
from kernbench.ab.schedule import add_round, interleaved_schedule, schedule
from kernbench.ab.sides import SideRequest
from kernbench.commands import run as run_command
from kernbench.errors import EXIT_INTERRUPTED, EXIT_OK, SpecError, UserError
from kernbench.execute.cell_timers import read_timers
from kernbench.execute.run_folder import RunFolder
from kernbench.plan import plan
from kernbench.results import model as results_io
from kernbench.spec.loader import load_bench

ROOT = Path(__file__).resolve().parent.parent

BENCH = """\
name: two-variants
description: side A times `base`, side B `slower` (10% longer busy-waits)
kernel: sleep
axes:
  work_us: [100, 200, 300]
variants:
  base: {{}}
  slower: {{scale: 1.1}}
  other: {{scale: 2.0}}
exclude:
  - {{variant: slower, work_us: 300}}
timer: {{warmup_s: 0.01, budget_s: 0.05, min_samples: 10, rel_ci: 0.005}}
{ab}"""
AB_BLOCK = "ab: {switch: variant, a: base, b: slower, rounds: 4}\n"


def write_bench(folder: Path, ab: str = AB_BLOCK) -> Path:
    path = folder / "two-variants.yaml"
    path.write_text(BENCH.format(ab=ab))
    return path


def test_the_cells_of_a_and_b_pair_by_their_axes_and_a_cell_without_a_twin_is_left_out(
    tmp_path,
):
    cells = plan(load_bench(write_bench(tmp_path)), "cpu")
    pairs, alone = pair_cells(cells, "variant", "base", "slower")
    assert [p.id for p in pairs] == ["base-vs-slower/work_us=100", "base-vs-slower/work_us=200"]
    assert [(p.a.id, p.b.id) for p in pairs] == [
        ("base/work_us=100", "slower/work_us=100"), ("base/work_us=200", "slower/work_us=200")]
    assert [p.cell("AA1").id for p in pairs] == ["base/work_us=100", "base/work_us=200"]
    assert [c.id for c in alone] == ["base/work_us=300"]
    # An environment variable's A/B times the same cell on both sides.
    same, none = pair_cells(cells, "KB_X", "0", "1")
    assert [p.id for p in same] == [c.id for c in cells] and not none
    assert all(p.a is p.b for p in same)


def test_a_sides_result_is_read_under_its_pairs_id():
    cell = results("r1_B", 1, lambda *_: 1e-4, variants=("slow",)).cells[0]
    paired = as_pair(cell, "variant", "fast", "slow")
    assert (paired.id, paired.variant) == ("fast-vs-slow/size=100", "fast-vs-slow")
    assert as_pair(cell, "KB_X", "0", "1") is cell
    # A results file may hold a cell's axes in another order than its id: the id decides.
    gemm = cell.model_copy(update={"id": "torch/shape=256x256x256,dtype=fp32",
                                   "variant": "torch",
                                   "axes": {"dtype": "fp32", "shape": [256, 256, 256]}})
    assert as_pair(gemm, "variant", "torch", "triton").id == (
        "torch-vs-triton/shape=256x256x256,dtype=fp32")


def test_b_records_its_own_pins_in_its_first_run_and_replays_after():
    for make in (schedule, interleaved_schedule):
        runs = make(3, "base", "slower", True, True)
        modes = {run.name: run.pins_mode for run in runs}
        assert modes.pop("r1_A") == "auto" and modes.pop("r1_B") == "auto"
        assert set(modes.values()) == {"replay"}
        plain = make(3, "0", "1", True)
        assert [r.pins_mode for r in plain] == ["auto"] + ["replay"] * (len(plain) - 1)


def test_a_round_added_to_an_ab_of_two_variants_replays_on_both_sides():
    from ab_fixtures.build import manifest

    plan = manifest(rounds=2).model_copy(update={
        "switch": "variant", "a": "fast", "b": "slow", "schedule": "interleaved",
        "runs": interleaved_schedule(2, "fast", "slow", False, True)})
    longer = add_round(plan)
    assert longer.runs[:4] == plan.runs
    assert [r.pins_mode for r in longer.runs[4:]] == ["replay", "replay"]


@pytest.mark.parametrize(("ab", "field", "message"), [
    ("ab: {switch: variant, a: base, b: slowr}\n", "ab.b", "'slowr' is not a variant"),
    ("ab: {switch: variant, a: base, b: base}\n", "ab.b", "a and b are both 'base'"),
])
def test_a_bench_whose_ab_block_names_no_variant_is_refused_at_its_line(
    tmp_path, ab, field, message
):
    with pytest.raises(SpecError) as caught:
        load_bench(write_bench(tmp_path, ab))
    assert field in str(caught.value) and message in str(caught.value)
    assert ":13: ab.b:" in str(caught.value)  # the ab: line


def test_a_variant_the_bench_lacks_is_refused_before_any_side_runs(tmp_path):
    bench = write_bench(tmp_path, "")
    with pytest.raises(UserError, match=r"--b: 'nope' is not a variant of bench 'two-var"):
        run_ab(str(bench), switch="variant", a="base", b="nope", device="cpu",
               out=tmp_path / "ab", run_side=FakeSides(), echo=lambda _: None)
    with pytest.raises(UserError, match="no cell of base has a twin of other"):
        run_ab(str(bench), switch="variant", a="base", b="other", device="cpu",
               only=["variant=base"], out=tmp_path / "ab", run_side=FakeSides(),
               echo=lambda _: None)


class FakeSides:
    """Answers each side run with results of the cells its --cells names; B is 10% slower."""

    def __init__(self) -> None:
        self.requests: list[SideRequest] = []

    def __call__(self, request: SideRequest) -> int:
        self.requests.append(request)
        request.log_path.write_text("fake log\n")
        flag = request.command.index("--cells")
        indices = [int(i) for i in request.command[flag + 1].split(",")]
        variant = "slower" if request.run.side == "B" else "base"
        made = results(request.run.name, request.run.round, lambda _r, v, size: size * 1e-6 * (
            1.1 if v == "slower" else 1.0), variants=(variant,),
            timer="graph" if request.run.name == "r1_A" else "event")
        for cell, index in zip(made.cells, indices, strict=False):
            cell.index = index
        results_io.save(made.model_copy(update={"complete": True}),
                        request.run_dir / "results.json")
        return 0


def fake_bench(folder: Path) -> Path:
    """The fake results' axis (size), with the variants the fake answers for."""
    path = folder / "fake.yaml"
    path.write_text(
        "name: fake\ndescription: fake\nkernel: sleep\naxes:\n  size: [100, 400]\n"
        "variants:\n  base: {work_us: 50}\n  slower: {work_us: 50, scale: 1.1}\n"
    )
    return path


def test_a_sequential_ab_of_two_variants_runs_each_sides_cells_and_calls_b_slower(tmp_path):
    sides = FakeSides()
    messages: list[str] = []
    outcome = run_ab(str(fake_bench(tmp_path)), switch="variant", a="base", b="slower",
                     rounds=4, schedule="sequential", device="cpu", out=tmp_path / "ab",
                     run_side=sides, echo=messages.append)
    assert [r.run.pins_mode for r in sides.requests] == ["auto", "auto"] + ["replay"] * 6
    cells = {r.run.side: r.command[r.command.index("--cells") + 1] for r in sides.requests}
    assert cells == {"A": "0,1", "B": "2,3"}  # plan indices: base's cells, then slower's
    assert all("variant" not in r.env for r in sides.requests)
    assert {r.env["KERNBENCH_SWITCH"] for r in sides.requests} == {"variant"}
    assert not any("appears nowhere" in m for m in messages)
    report = outcome.report
    assert report.switch == "variant" and (report.a, report.b) == ("base", "slower")
    assert [c.id for c in report.cells] == ["base-vs-slower/size=100", "base-vs-slower/size=400"]
    assert [c.verdict for c in report.cells] == ["slower", "slower"]
    assert all(9 < c.delta_pct < 11 for c in report.cells)
    # r1_A's timer is given to its cells' twins on B too, so no pair compares two timers.
    timers = read_timers(outcome.folder / "timers.json")
    assert timers == {f"{v}/size={s}": "graph" for v in ("base", "slower") for s in (100, 400)}


def test_a_side_command_of_an_ab_of_two_variants_plans_its_own_cells(tmp_path, monkeypatch):
    sides = FakeSides()
    outcome = run_ab(str(fake_bench(tmp_path)), switch="variant", a="base", b="slower",
                     rounds=2, schedule="sequential", device="cpu", out=tmp_path / "ab",
                     run_side=sides, echo=lambda _: None)
    request = next(r for r in sides.requests if r.run.name == "r2_B")
    # B's run is given A's cells' timers too (its twins'): ids outside its own cells.
    assert "base/size=100" in read_timers(outcome.folder / "timers.json")
    assert "--timers" in request.command
    started: list[list[str]] = []

    def measure(run: RunFolder) -> int:
        started.append([c.id for c in run_command.planned_cells(run.options, run.bench)])
        return EXIT_OK

    monkeypatch.setattr(run_command, "measure", measure)
    for name, value in request.env.items():
        if value is None:  # MILESTONE_FAST: a side always measures
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    for made_after in request.run_dir.iterdir():  # the fake's: a run wants a new folder,
        if made_after != request.log_path:  # but for the log its runner opened there
            made_after.unlink()
    assert request.command[:4] == [sys.executable, "-m", "kernbench", "run"]
    result = CliRunner().invoke(cli.app, request.command[3:])
    assert result.exit_code == EXIT_OK, result.output
    assert started == [["slower/size=100", "slower/size=400"]]
    saved = json.loads((outcome.folder / "r2_B" / "run.json").read_text())
    assert saved["cells"] == [2, 3]


def test_a_resumed_ab_of_two_variants_runs_the_sides_left_with_their_own_cells(tmp_path):
    class Stopping(FakeSides):
        def __call__(self, request: SideRequest) -> int:
            if request.run.name == "r2_A" and not stopped:
                stopped.append(request.run.name)
                raise KeyboardInterrupt
            return super().__call__(request)

    stopped: list[str] = []
    sides = Stopping()
    stopped_at = run_ab(str(fake_bench(tmp_path)), switch="variant", a="base", b="slower",
                        rounds=3, schedule="sequential", device="cpu", out=tmp_path / "ab",
                        run_side=sides, echo=lambda _: None)
    assert stopped_at.exit_code == EXIT_INTERRUPTED
    sides.requests.clear()
    outcome = resume_ab(tmp_path / "ab", run_side=sides, echo=lambda _: None)
    assert [r.run.name for r in sides.requests] == ["r2_A", "r3_A", "r3_B"]
    assert {r.run.name: r.run.pins_mode for r in sides.requests} == {
        "r2_A": "replay", "r3_A": "replay", "r3_B": "replay"}
    assert [c.verdict for c in outcome.report.cells] == ["slower", "slower"]


def test_cells_flag_refuses_an_index_the_plan_lacks(tmp_path):
    result = CliRunner().invoke(cli.app, [
        "run", "--bench", str(fake_bench(tmp_path)), "--device", "cpu", "--cells", "1,9",
        "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "--cells: the plan has no cell 9" in result.output


@pytest.mark.slow
def test_an_interleaved_ab_of_two_variants_finds_the_ten_percent_slower_one(tmp_path):
    messages: list[str] = []
    outcome = run_ab(str(write_bench(tmp_path)), device="cpu", out=tmp_path / "ab",
                     echo=messages.append)
    report = outcome.report
    assert outcome.exit_code == 0 and report.schedule == "interleaved"
    assert [c.id for c in report.cells] == [
        "base-vs-slower/work_us=100", "base-vs-slower/work_us=200"]
    assert [c.verdict for c in report.cells] == ["slower", "slower"], [
        c.ci_pct for c in report.cells]
    assert all(5 < c.delta_pct < 15 for c in report.cells)
    assert any("1 cell of base or slower without a twin" in m for m in messages)
    # Each side's own results keep their variant.
    b_side = results_io.load(outcome.folder / "r2_B" / "results.json")
    assert [c.id for c in b_side.cells] == ["slower/work_us=100", "slower/work_us=200"]
    assert {c.params["scale"] for c in b_side.cells} == {1.1}


@pytest.mark.slow
def test_a_sequential_ab_of_two_variants_runs_whole_sides_of_their_own_cells(tmp_path):
    outcome = run_ab(str(write_bench(tmp_path)), device="cpu", out=tmp_path / "ab",
                     schedule="sequential", rounds=2, echo=lambda _: None)
    assert outcome.exit_code == 0 and outcome.report.schedule == "sequential"
    assert [c.id for c in outcome.report.cells] == [
        "base-vs-slower/work_us=100", "base-vs-slower/work_us=200"]
    for side, variant in (("r1_A", "base"), ("r1_B", "slower"), ("r2_B", "slower")):
        cells = results_io.load(outcome.folder / side / "results.json").cells
        assert [c.id for c in cells] == [f"{variant}/work_us=100", f"{variant}/work_us=200"]
    assert all(c.delta_pct > 0 for c in outcome.report.cells)
