"""Flat exports of results files: csv and json rows per cell and round, CI trackers' list."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import UserError
from kernbench.render.export import FORMATS, export, rows
from kernbench.results import model as results_io

REPO = Path(__file__).resolve().parents[1]
GEMM = REPO / "benches" / "data" / "milestone-1h-gemm.json.xz"
CCL = REPO / "benches" / "data" / "milestone-1h-ccl.json"


def test_the_h200_gemm_sweep_exports_a_row_per_cell_and_round_with_its_own_rates():
    results = results_io.load(GEMM)
    table = list(csv.DictReader(io.StringIO(export(results, "csv"))))
    assert len(table) == sum(len(c.rounds) for c in results.cells) == 153 * 3
    for column in ("M", "N", "K", "dtype", "variant", "round", "time_s", "tflops", "commit"):
        assert column in table[0]
    cell = results.cells[0]
    first = [r for r in table if r["cell"] == cell.id]
    assert [int(r["round"]) for r in first] == [1, 2, 3]
    for row, measured in zip(first, cell.rounds, strict=True):
        assert float(row["time_s"]) == pytest.approx(measured.median_s)
        # a round's TFLOP/s is its own: flops over that round's median
        assert float(row["tflops"]) == pytest.approx(
            2 * int(row["M"]) * int(row["N"]) * int(row["K"]) / measured.median_s / 1e12
        )


def test_json_holds_the_same_rows_as_csv():
    results = results_io.load(CCL)
    as_json = json.loads(export(results, "json"))
    assert len(as_json) == len(rows(results))
    assert {"op", "world_size", "busbw_gbs", "time_s"} <= set(as_json[0])


def test_csv_writes_a_boolean_as_yaml_and_only_do():
    results = results_io.load(CCL)
    table = list(csv.DictReader(io.StringIO(export(results, "csv"))))
    assert {row["inplace"] for row in table} == {"true", "false"}  # --only inplace=false
    assert {row["inplace"] for row in json.loads(export(results, "json"))} == {True, False}


def test_the_tracker_list_gives_each_ok_cell_its_median_or_a_metric():
    results = results_io.load(GEMM)
    ok = [c for c in results.cells if c.status == "ok"]
    times = json.loads(export(results, "bench"))
    assert len(times) == len(ok) and times[0]["unit"] == "s"
    assert times[0]["value"] == ok[0].summary.median_s
    rates = json.loads(export(results, "bench", metric="tflops"))
    assert rates[0]["unit"] == "TFLOP/s" and rates[0]["value"] == pytest.approx(
        ok[0].metrics["tflops"], rel=1e-11)
    with pytest.raises(UserError, match="no cell has a metric 'nope'; the metrics are "):
        export(results, "bench", metric="nope")


def test_the_export_command_writes_a_file(tmp_path: Path):
    out = tmp_path / "gemm.csv"
    result = CliRunner().invoke(cli.app, ["export", str(GEMM), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("bench,cell,variant,round,status,reason,time_s,samples,")
    bad = CliRunner().invoke(cli.app, ["export", str(GEMM), "--format", "xml"])
    assert bad.exit_code == 2 and "--format: 'xml' is not one of csv, json, bench" in bad.output


def test_an_unknown_metric_is_refused_with_the_names_and_csv_takes_none():
    results = results_io.load(GEMM)
    known = ", ".join(sorted({m for c in results.cells if c.status == "ok" for m in c.metrics}))
    for fmt in FORMATS:
        with pytest.raises(UserError) as refused:
            export(results, fmt, metric="nosuch")
        assert str(refused.value) == f"--metric: no cell has a metric 'nosuch'; the metrics " \
            f"are {known}"
    with pytest.raises(UserError, match="only --format bench reads it; csv has a column"):
        export(results, "csv", metric="tflops")
    result = CliRunner().invoke(cli.app, ["export", str(GEMM), "--metric", "nosuch"])
    assert result.exit_code == 2 and result.stdout == ""


def test_the_csv_carries_the_report_flags_timer_driver_and_torch():
    # The report flags `throttled 50%` and `unsteady`; a CSV without them cannot be
    # filtered to the rows the report warns of.
    results = results_io.load(REPO / "benches" / "data" / "ops-norm-h200" / "results.json.xz")
    table = list(csv.DictReader(io.StringIO(export(results, "csv"))))
    cell = "eager/op=softmax,rows=16384,hidden=16384,dtype=fp32"  # throttled 50%
    shares = [float(row["throttled_fraction"]) for row in table if row["cell"] == cell]
    assert len(shares) == 2 and sum(shares) / 2 == pytest.approx(0.5)
    steady = {row["unsteady"] for row in table
              if row["cell"] == "eager/op=softmax,rows=1024,hidden=1024,dtype=fp32"}
    assert steady == {"true"}
    assert {(row["driver"], row["torch"]) for row in table} == {("580.159.04", "2.11.0")}
    timers = {row["cell"]: row["timer"] for row in table}
    assert timers["eager/op=softmax,rows=1024,hidden=1024,dtype=bf16"] == "graph"
    assert timers["eager/op=softmax,rows=16384,hidden=16384,dtype=bf16"] == "event"


def test_a_tracker_gets_a_bandwidth_in_gb_s_not_under_its_column_name():
    results = results_io.load(REPO / "benches" / "data" / "ops-norm-h200" / "results.json.xz")
    assert json.loads(export(results, "bench", metric="gbs"))[0]["unit"] == "GB/s"


@pytest.mark.parametrize("name", ["timer", "unsteady", "status", "time_s", "busbw_gbs"])
def test_a_parameter_named_as_a_computed_column_is_refused_not_overwritten(name: str):
    results = results_io.load(CCL)
    cell = results.cells[0]
    cell.params[name] = "mine"
    with pytest.raises(UserError) as refused:
        rows(results, source="r.json")
    assert str(refused.value) == (f"r.json: cell {cell.id}: parameter {name!r} has the name "
                                  "of a column export computes; rename the parameter in the "
                                  "bench")


def test_a_trackers_time_metric_has_its_ci_as_range_and_says_smaller_is_better():
    # `--metric time_s` gave an empty range and the help called a time bigger-is-better.
    results = results_io.load(GEMM)
    ok = [c for c in results.cells if c.status == "ok"]
    (entry, *_) = json.loads(export(results, "bench", metric="time_s"))
    (default, *_) = json.loads(export(results, "bench"))
    assert entry["range"] == default["range"] != ""
    assert "smaller is better" in entry["extra"]
    (rate, *_) = json.loads(export(results, "bench", metric="tflops"))
    assert rate["range"].startswith("±") and "bigger is better" in rate["extra"]
    summary = ok[0].summary
    half = ok[0].metrics["tflops"] * summary.median_s * (
        1 / summary.ci_low_s - 1 / summary.ci_high_s) / 2
    assert float(rate["range"][1:]) == pytest.approx(half, rel=1e-2)
    (flops, *_) = json.loads(export(results, "bench", metric="flops"))
    assert flops["range"] == "" and "better" not in flops["extra"]
    help_text = CliRunner().invoke(cli.app, ["export", "--help"]).output
    assert "metric (bigger" not in help_text and "extra says whether" in " ".join(
        help_text.replace("│", " ").split())


def test_exported_floats_carry_no_float_noise():
    from kernbench.render.export import without_float_noise

    assert without_float_noise(0.1 + 0.2) == 0.3
    assert without_float_noise(3) == 3 and without_float_noise("0.1") == "0.1"
    results = results_io.load(GEMM)
    cell = results.cells[0]
    noisy = cell.model_copy(update={"metrics": {**cell.metrics, "util": 0.1 + 0.2}})
    noisy_results = results.model_copy(update={"cells": [noisy, *results.cells[1:]]})
    (entry, *_) = json.loads(export(noisy_results, "bench", metric="util"))
    assert "0.30000000000000004" not in export(noisy_results, "bench", metric="util")
    assert entry["value"] == 0.3
