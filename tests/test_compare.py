"""`kernbench compare`: two saved runs, a verdict per cell, an exit code CI can gate on."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_helpers import invoke
from fixtures_results import make_gemm_results
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.compare import (
    CellComparison,
    Comparison,
    _u_counts,
    compare,
    gate,
    least_rounds,
    markdown,
    shift_interval,
)
from kernbench.ab.gate import fail_on_choice, failing, gate_rounds_problem
from kernbench.commands.compare import compare_runs
from kernbench.errors import UserError
from kernbench.results import model as results_io
from kernbench.results.ab import Verdict
from kernbench.results.model import CellResult, Results
from kernbench.spec.ab_model import GATE_MIN_ROUNDS

BENCH = """\
name: compare-test
description: busy waits; KB_CMP=1 makes them 20% longer
kernel: sleep
axes:
  work_us: [200, 400]
variants:
  plain: {switch: KB_CMP, effect_pct: 20}
timer: {warmup_s: 0.005, budget_s: 0.03, min_samples: 5}
rounds: 6  # a --fail-on gate takes GATE_MIN_ROUNDS
"""


def run_once(tmp_path: Path, name: str, slow: bool) -> Path:
    bench = tmp_path / "compare.yaml"
    bench.write_text(BENCH)
    env = {**os.environ, "KB_CMP": "1" if slow else "0"}
    result = CliRunner().invoke(
        cli.app, ["run", "--bench", str(bench), "--device", "cpu", "--no-figures",
                  "--out", str(tmp_path / name)], env=env)
    assert result.exit_code == 0, result.output
    return tmp_path / name / "results.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("compare")
    return {name: run_once(folder, name, slow)
            for name, slow in (("base", False), ("again", False), ("slower", True))}


@pytest.mark.slow
def test_a_twenty_percent_slower_kernel_is_slower_in_every_cell_and_fails_the_gate(runs):
    gate = CliRunner().invoke(cli.app, ["compare", str(runs["base"]), str(runs["slower"]),
                                        "--fail-on", "slower"])
    assert gate.exit_code == 1, gate.output
    assert gate.output.count("| slower |") == 2
    assert "2 cells slower" in gate.output
    plain = CliRunner().invoke(cli.app, ["compare", str(runs["base"]), str(runs["slower"])])
    assert plain.exit_code == 0
    # run folders name their results.json
    folders = CliRunner().invoke(cli.app, ["compare", str(runs["base"].parent),
                                           str(runs["slower"].parent)])
    assert (folders.exit_code, folders.output) == (0, plain.output.replace(
        str(runs["base"]), str(runs["base"].parent)).replace(
        str(runs["slower"]), str(runs["slower"].parent)))


@pytest.mark.slow
def test_the_same_code_twice_makes_no_faster_or_slower_call(runs, tmp_path):
    result = CliRunner().invoke(cli.app, ["compare", str(runs["base"]), str(runs["again"]),
                                          "--fail-on", "any", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "compare.json").read_text())
    assert {c["verdict"] for c in record["cells"]} <= {"same", "unstable"}
    assert (tmp_path / "compare.md").read_text().startswith("# ")


@pytest.mark.slow
def test_runs_of_different_benches_are_refused_unless_forced(runs, tmp_path):
    other = json.loads(runs["base"].read_text())
    other["bench"] = "another"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    refused = CliRunner().invoke(cli.app, ["compare", str(runs["base"]), str(path)])
    assert refused.exit_code == 2
    assert "the runs differ: bench 'compare-test' against 'another'" in refused.output
    forced = CliRunner().invoke(cli.app, ["compare", str(runs["base"]), str(path), "--force"])
    assert forced.exit_code == 0


def test_the_mann_whitney_counts_and_the_interval_coverage():
    assert _u_counts(3, 3) == (1, 1, 2, 3, 3, 3, 3, 2, 1, 1)
    assert sum(_u_counts(4, 5)) == math.comb(9, 4)
    estimate, low, high, coverage = shift_interval([0.0, 0.01, 0.02], [0.2, 0.21, 0.19])
    assert (low, high) == (pytest.approx(0.17), pytest.approx(0.21))  # the min-max
    assert coverage == pytest.approx(0.9) and estimate == pytest.approx(0.19)
    wide = shift_interval([float(x) for x in range(6)], [float(x) + 10 for x in range(6)])
    assert wide[3] >= 0.95 and wide[1] > 4  # inner order statistics once they reach 95%


def test_the_table_opens_with_the_verdict_counts_and_counts_long_lists_per_variant():
    def cell(name: str, verdict: Verdict, ratio: float) -> CellComparison:
        return CellComparison(name, verdict, 100 * (ratio - 1), (0.0, 0.0), 0.9, 1e-3,
                              1e-3 * ratio, (3, 3))

    comparison = Comparison(
        cells=[cell("a/n=1", "slower", 1.21), cell("a/n=2", "same", 1.0)],
        only_in_base=[f"b/n={i}" for i in range(11)] + ["c/n=1"],
        only_in_new=["d/n=1"], stopped_working=[], not_ok=[], min_effect_pct=1.0,
    )
    text = markdown(comparison, "BASE.json", "NEW.json")
    assert "- Verdicts: faster 0, slower 1, same 1, unstable 0 (of 2 cells in both)." in text
    assert "- Geometric mean of NEW/BASE over those cells: 1.1000 (+10.00 %)." in text
    assert "Only in BASE: 12 cells (b 11, c 1; `--out` writes every id to compare.json)" in text
    assert "Only in NEW: d/n=1\n" in text
    # the medians as the run's report shows them, not `0.001 s` or `2.792e-05 s`
    assert "| a/n=1 | slower | +21.00 % |" in text and "| 1 ms | 1.21 ms |" in text


def test_intervals_under_95_percent_say_how_many_false_calls_to_expect():
    # Two rounds against two: the widest interval covers 66.7 %; three against three, 90 %.
    def cell(name: str, verdict: Verdict, coverage: float, rounds: int) -> CellComparison:
        return CellComparison(name, verdict, 5.0, (2.0, 8.0), coverage, 1e-3, 1.05e-3,
                              (rounds, rounds))

    assert least_rounds() == 4 and 1 - 2 / sum(_u_counts(4, 4)) >= 0.95
    weak = Comparison(
        cells=[cell("a/n=1", "slower", 2 / 3, 2), cell("a/n=2", "slower", 0.9, 3),
               cell("a/n=3", "same", 0.971, 4)],
        only_in_base=[], only_in_new=[], stopped_working=[], not_ok=[], min_effect_pct=1.0,
    )
    assert ("- 2 cells on intervals under 95% coverage (as low as 66.7%): a change that "
            "did nothing would still be called faster or slower in up to 0.4 of them. "
            "Measure at least 4 rounds a side for 95%.") in markdown(weak, "B", "N")
    assert gate(weak, "slower") == [
        "2 cells slower (2 of them on intervals under 95% coverage): a/n=1, a/n=2"]
    strong = Comparison(cells=[cell("a/n=3", "slower", 0.971, 4)], only_in_base=[],
                        only_in_new=[], stopped_working=[], not_ok=[], min_effect_pct=1.0)
    assert "coverage (as low" not in markdown(strong, "B", "N")
    assert gate(strong, "slower") == ["1 cell slower: a/n=3"]


def saved(tmp_path: Path, name: str, results: Results) -> str:
    path = tmp_path / f"{name}.json"
    results_io.save(results, path)
    return str(path)


def broken(cell: CellResult) -> CellResult:
    return cell.model_copy(update={"status": "failed", "reason": "boom", "rounds": [],
                                   "summary": None, "metrics": {}})


def test_a_cell_that_stopped_working_fails_the_slower_and_any_gates(tmp_path):
    base = make_gemm_results(failed=False, variants=("resident",), rounds=GATE_MIN_ROUNDS)
    new = base.model_copy(update={"cells": [broken(base.cells[0]), *base.cells[1:]]})
    paths = saved(tmp_path, "base", base), saved(tmp_path, "new", new)
    stopped = base.cells[0].id
    for fail_on in ("slower", "any"):
        result = CliRunner().invoke(cli.app, ["compare", *paths, "--fail-on", fail_on])
        assert result.exit_code == 1, result.output
        assert f"1 cell stopped working (measured in BASE, failed or invalid in NEW): " \
            f"{stopped}" in result.output
    faster = CliRunner().invoke(cli.app, ["compare", *paths, "--fail-on", "faster"])
    assert faster.exit_code == 0, faster.output
    assert f"Stopped working (failed or invalid in NEW): {stopped}\n" in faster.output
    # Failed in BASE (either way in NEW) is no regression of NEW's.
    back = CliRunner().invoke(cli.app, ["compare", paths[1], paths[0], "--fail-on", "any"])
    assert back.exit_code == 0, back.output
    assert f"Failed or invalid in BASE: {stopped}\n" in back.output


@pytest.mark.parametrize("fail_on", [[], ["--fail-on", "slower"], ["--fail-on", "any"]])
def test_runs_without_a_cell_measured_in_both_are_refused_not_passed(tmp_path, fail_on):
    base = make_gemm_results(failed=False, variants=("resident",), rounds=GATE_MIN_ROUNDS)
    renamed = [c.model_copy(update={"id": "x" + c.id}) for c in base.cells]
    paths = saved(tmp_path, "base", base), \
        saved(tmp_path, "new", base.model_copy(update={"cells": renamed}))
    code, out, err = invoke("compare", *paths, *fail_on, "--out", str(tmp_path / "cmp"))
    assert code == 2, out
    n = len(base.cells)
    assert err == f"compare: no cell was measured in both runs ({n} only in BASE, {n} only " \
        "in NEW); nothing to compare\n"
    assert not (tmp_path / "cmp").exists()


def test_a_side_of_one_round_makes_no_call_but_unstable(tmp_path):
    one = make_gemm_results(failed=False, variants=("resident",), rounds=1)
    slower = [c.model_copy(update={"rounds": [r.model_copy(update={"median_s": 2 * r.median_s})
                                              for r in c.rounds]}) for c in one.cells]
    paths = saved(tmp_path, "one", one), \
        saved(tmp_path, "slower", one.model_copy(update={"cells": slower}))
    code, out, _ = invoke("compare", *paths)
    assert code == 0, out  # +100 % in one round against one: no evidence, no call
    n = len(one.cells)
    assert f"- Verdicts: faster 0, slower 0, same 0, unstable {n} (of {n} cells in both)." in out
    assert f"- {n} cells with fewer than 2 rounds on a side: unstable" in out
    three = saved(tmp_path, "three", make_gemm_results(failed=False, variants=("resident",)))
    code, out, _ = invoke("compare", three, paths[1])
    assert code == 0 and f"unstable {n} (of {n} cells" in out, out  # one side is enough


@pytest.mark.parametrize("unfinished", ["base", "new"])
def test_an_unfinished_run_is_refused_not_called_stopped_working(tmp_path, unfinished):
    whole = make_gemm_results(failed=False, variants=("resident",))
    cells = [whole.cells[0].model_copy(update={"status": "pending", "summary": None,
                                               "rounds": whole.cells[0].rounds[:1]}),
             *whole.cells[1:]]
    paths = {"base": saved(tmp_path, "base", whole), "new": saved(tmp_path, "new", whole)}
    paths[unfinished] = saved(tmp_path, "stopped", whole.model_copy(
        update={"cells": cells, "complete": False}))
    code, out, err = invoke("compare", paths["base"], paths["new"], "--fail-on", "slower")
    assert code == 2, out
    assert err == f"compare: {unfinished.upper()} {paths[unfinished]} is an unfinished run " \
        f"(1 of {len(cells)} cells pending); finish it with kernbench run --resume " \
        f"{Path(paths[unfinished]).parent}\n"


@pytest.mark.parametrize("unfinished", ["base", "new"])
def test_the_core_files_a_cell_not_measured_yet_as_pending_not_stopped_working(unfinished):
    whole = make_gemm_results(failed=False, variants=("resident",))
    first = whole.cells[0]
    cut = whole.model_copy(update={"complete": False, "cells": [
        first.model_copy(update={"status": "pending", "summary": None,
                                 "rounds": first.rounds[:1]}), *whole.cells[1:]]})
    base, new = (cut, whole) if unfinished == "base" else (whole, cut)
    comparison = compare(base, new, 1.0)
    assert (comparison.pending, comparison.stopped_working, comparison.not_ok) == \
        ([first.id], [], [])
    assert gate(comparison, "any") == []
    assert f"\nPending (not measured yet: the run stopped before them): {first.id}\n" in \
        markdown(comparison, "base", "new")


def test_the_table_gives_each_sides_time_in_a_unit_of_one_to_three_integer_digits():
    # It read "3.082e-06 s" and "0.0008508 s" in one column.
    cells = [CellComparison("a/n=1", "slower", 51.0, (7.9, 160.6), 0.97, 3.082e-6, 4.604e-6,
                            (4, 4)),
             CellComparison("a/n=2", "slower", 1678.0, (1.0, 2.0), 0.97, 4.785e-5, 8.508e-4,
                            (4, 4))]
    comparison = Comparison(cells=cells, only_in_base=[], only_in_new=[], stopped_working=[],
                            not_ok=[], min_effect_pct=1.0)
    text = markdown(comparison, "base", "new")
    assert "| coverage | BASE time | NEW time |" in text
    assert "BASE time, NEW time: the time of one call" in text
    assert "| 3.082 µs | 4.604 µs |" in text
    assert "| 47.85 µs | 850.8 µs |" in text


def test_the_table_names_each_sides_gpu_driver_code_and_date():
    # An H200 run against an H100 one (--force): without these lines the table reads as
    # one machine's regression, not as two GPUs.
    data = Path(__file__).resolve().parents[1] / "benches" / "data"
    text, _ = compare_runs(data / "milestone-1h-gemm.json.xz",
                           data / "milestone-1h-gemm-h100.json.xz", force=True)
    assert ("- BASE: NVIDIA H200 (cuda), driver 580.159.04; kernbench 0.1.0 @ 49923b9b50 "
            "(dirty), torch 2.11.0, triton 3.6.0; measured 2026-12-01T04:50:46Z, 3 rounds"
            ) in text.splitlines()
    assert any(line.startswith("- NEW: NVIDIA H100 80GB HBM3 (cuda)")
               for line in text.splitlines())


@pytest.mark.parametrize("rounds", [GATE_MIN_ROUNDS - 1, 3, 2, 1])
def test_compare_gates_on_the_rounds_ab_gates_on(tmp_path, rounds):
    many = saved(tmp_path, "many", make_gemm_results(failed=False, variants=("resident",),
                                                     rounds=GATE_MIN_ROUNDS))
    few = saved(tmp_path, "few", make_gemm_results(failed=False, variants=("resident",),
                                                   rounds=rounds))
    for paths in ((many, few), (few, many)):
        code, out, err = invoke("compare", *paths, "--fail-on", "slower")
        assert code == 2, out
        assert err.startswith(f"--fail-on slower: a gate needs intervals of 95% coverage, "
                              f"which take {GATE_MIN_ROUNDS} rounds; "
                              f"{rounds} {'gives' if rounds == 1 else 'give'} ")
        assert err.endswith(": compare runs of more rounds, or drop --fail-on\n")
    assert gate_rounds_problem("slower", rounds) is not None
    assert gate_rounds_problem("slower", GATE_MIN_ROUNDS) is None
    assert invoke("compare", many, many, "--fail-on", "slower")[0] == 0


@dataclass(frozen=True)
class Called:
    id: str
    verdict: Verdict


def test_the_gate_fails_on_the_declared_verdicts():
    cells = [Called(v, v) for v in ("faster", "slower", "same", "unstable")]
    assert [c.verdict for c in failing(cells, "slower")] == ["slower"]
    assert [c.verdict for c in failing(cells, "faster")] == ["faster"]
    assert [c.verdict for c in failing(cells, "any")] == ["faster", "slower"]
    assert failing(cells, None) == []


@pytest.mark.parametrize("rounds", [3, GATE_MIN_ROUNDS])
def test_a_bad_fail_on_is_refused_first_in_the_words_ab_uses(tmp_path, rounds):
    # 3 rounds: not the gate's rounds refused; 6: not after both runs were compared.
    run = saved(tmp_path, "run", make_gemm_results(failed=False, variants=("resident",),
                                                   rounds=rounds))
    for paths in ((run, run), (str(tmp_path / "missing.json"), run)):
        code, out, err = invoke("compare", *paths, "--fail-on", "worse")
        assert (code, out, err) == (2, "", "--fail-on: 'worse' is not one of slower, faster, "
                                    "any\n")
    with pytest.raises(UserError, match=r"^--fail-on: 'worse' is not one of slower, faster, "
                       r"any$"):
        fail_on_choice("worse")
