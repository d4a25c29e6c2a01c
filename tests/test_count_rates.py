"""A count of work the bench lists under `rates:` (elements, tokens) is reported per second,
as flops become TFLOP/s and bytes GB/s: in results.json, the report, the CSV export and the
throughput figure (ADR 0075)."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.analyze.metrics import MetricError, cell_metrics
from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_OK, EXIT_USAGE
from kernbench.results import model as results_io
from kernbench.spec.models import Bench, spec_hash

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]

BENCH = """\
name: nap
description: a short spin
kernel: sleep
axes: {{work_us: [1, 20]}}
metrics: {{{metrics}}}
{rates}
figures: [throughput]
timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3}}
"""
COUNTED = BENCH.format(metrics="elements: 1000*work_us, ai: 3", rates="rates: [elements]")
# The factor each prefix a heading may carry stands for, spelled out here rather than
# taken from kernbench.units.
PREFIXES = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def spec(**fields: object) -> Bench:
    return Bench.model_validate({"name": "n", "description": "d", "kernel": "sleep",
                                 "axes": {"rows": [4], "cols": [8]}, **fields})


def test_a_listed_count_gets_its_rate_at_the_median_and_other_metrics_do_not() -> None:
    bench = spec(metrics={"elements": "rows*cols", "ai": "3"}, rates=["elements"])
    metrics, _ = cell_metrics(bench, {"rows": 4, "cols": 8}, 2e-6, None)
    assert metrics["elements_per_s"] == pytest.approx(32 / 2e-6)
    assert "ai_per_s" not in metrics


def test_a_listed_count_may_not_be_negative_as_flops_and_bytes_may_not() -> None:
    bench = spec(metrics={"elements": "rows - cols"}, rates=["elements"])
    with pytest.raises(MetricError, match="elements cannot be negative"):
        cell_metrics(bench, {"rows": 4, "cols": 8}, 2e-6, None)
    unrated = spec(metrics={"elements": "rows - cols"})
    assert cell_metrics(unrated, {"rows": 4, "cols": 8}, 2e-6, None)[0]["elements"] == -4


def test_a_bench_without_rates_keeps_the_hash_it_had_before_rates_existed() -> None:
    # A resumed multi-host run's followers and merge's shards compare spec_hash exactly:
    # ops-norm's committed results were hashed before `rates:` existed.
    recorded = results_io.load(REPO / "benches" / "data" / "ops-norm-h200")
    assert "rates" not in recorded.spec
    assert spec_hash(Bench.model_validate(recorded.spec)) == recorded.spec_hash
    rated = Bench.model_validate({**recorded.spec, "rates": ["elements"]})
    assert spec_hash(rated) != recorded.spec_hash


@pytest.mark.parametrize(
    ("metrics", "rates", "message"),
    [
        ("elements: 1000*work_us", "rates: [elemnts]",
         "rates.0: 'elemnts' is not a metric of this bench; its metrics: elements"),
        ("bytes: 8*work_us", "rates: [bytes]",
         "rates.0: 'bytes' is always rated (GB/s); list only other metrics"),
        ("elements: 1000*work_us", "rates: [elements, elements]",
         "rates.1: 'elements' is listed twice"),
        ("elements: 1000*work_us, elements_per_s: 3", "rates: [elements]",
         "metrics.elements_per_s: 'elements_per_s' is the rate kernbench computes from "
         "'elements' (rates:), which would replace this one; name it otherwise"),
    ],
)
def test_a_rates_entry_that_cannot_be_rated_is_refused_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metrics: str, rates: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("nap.yaml").write_text(BENCH.format(metrics=metrics, rates=rates))
    line = 6 if message.startswith("rates") else 5
    result = runner.invoke(cli.app, ["validate", "nap.yaml"])
    assert (result.exit_code, result.stderr) == (EXIT_USAGE, f"nap.yaml:{line}: {message}\n")


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rates")
    (folder / "nap.yaml").write_text(COUNTED)
    out = folder / "out"
    assert run(RunRequest(bench=str(folder / "nap.yaml"), out=out, device="cpu")) == EXIT_OK
    return out


@pytest.mark.slow
def test_results_json_holds_each_cells_count_over_its_median(measured: Path) -> None:
    for cell in results_io.load(measured / "results.json").cells:
        assert cell.summary is not None
        rate = cell.metrics["elements"] / cell.summary.median_s
        assert cell.metrics["elements_per_s"] == pytest.approx(rate, rel=1e-12)
        assert "ai_per_s" not in cell.metrics


@pytest.mark.slow
def test_the_report_shows_the_rate_beside_the_count_with_one_prefix(measured: Path) -> None:
    cells = {c.id: c for c in results_io.load(measured / "results.json").cells}
    md = (measured / "report.md").read_text()
    header = re.search(r"\| elements \| ([kMGT]?) ?elements/s \| ai \| flags \|", md)
    assert header is not None, md
    factor = PREFIXES[header.group(1)]
    shown = []
    for cell_id, cell in cells.items():
        assert cell.summary is not None
        (row,) = [line for line in md.splitlines() if line.startswith(f"| {cell_id} |")]
        value = row.split(" | ")[-3]
        expected = cell.metrics["elements"] / cell.summary.median_s / factor
        assert float(value) == pytest.approx(expected, rel=1e-3)
        shown.append(float(value))
    assert 1 <= max(shown) < 1000  # the largest prefix that keeps the column's top >= 1
    html = (measured / "report.html").read_text()
    heading = f"{header.group(1)} elements/s".strip()
    assert f"<th>elements</th><th>{heading}</th><th>ai</th>" in html
    for value in shown:
        assert f'<td class="num">{value:.4g}</td>' in html


@pytest.mark.slow
def test_the_csv_gives_each_rounds_rate_at_its_own_time(measured: Path) -> None:
    rows = list(csv.DictReader((measured / "results.csv").read_text().splitlines()))
    assert rows and "ai_per_s" not in rows[0]
    for row in rows:
        rate = float(row["elements"]) / float(row["time_s"])
        assert float(row["elements_per_s"]) == pytest.approx(rate, rel=1e-9)


@pytest.mark.slow
def test_the_throughput_figure_draws_the_count_rate(measured: Path) -> None:
    data = json.loads((measured / "figures" / "throughput.json").read_text())
    unit = re.fullmatch(r"throughput \(([kMGT]?) ?elements/s\)", data["y_label"])
    assert unit is not None, data["y_label"]
    cells = results_io.load(measured / "results.json").cells
    drawn = sorted(p["value"] for s in data["series"] for p in s["points"])
    rates = sorted(c.metrics["elements_per_s"] / PREFIXES[unit.group(1)] for c in cells)
    assert drawn == pytest.approx(rates, rel=1e-3)


@pytest.mark.slow
def test_collect_takes_a_changed_rates_list_without_measuring_again(
    measured: Path, tmp_path: Path
) -> None:
    # Rates are computed from the samples, as metrics are: listing a count after the run
    # rebuilds its results, where a change in what is measured would be refused.
    folder = Path(shutil.copytree(measured.parent, tmp_path / "copy"))
    run_json = folder / "out" / "run.json"
    run_json.write_text(run_json.read_text().replace(str(measured.parent), str(folder)))
    for text, rated in ((COUNTED.replace("rates: [elements]", ""), False), (COUNTED, True)):
        (folder / "nap.yaml").write_text(text)
        result = runner.invoke(cli.app, ["collect", str(folder / "out")])
        assert result.exit_code == EXIT_OK, result.stderr
        cells = results_io.load(folder / "out" / "results.json").cells
        assert all(("elements_per_s" in c.metrics) == rated for c in cells)
