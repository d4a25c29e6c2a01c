"""Where an A/B measured: read from its sides' provenance into ab.json (ab/measured_on.py)
and said alike by report.md, report.html, the figure and the closing lines
(render/measured_on.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ab_fixtures.build import manifest, outcomes
from test_ab_report import slower_on_b
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.analysis import analyze
from kernbench.ab.outputs import closing_lines
from kernbench.errors import EXIT_OK
from kernbench.render.ab import ab_figure
from kernbench.render.ab_report import render_markdown
from kernbench.render.measured_on import runs_text, where_measured
from kernbench.render.report import write_ab_html
from kernbench.results.ab import AB_FORMAT, AB_VERSION, AbReport, RunsWithValue

REPO = Path(__file__).resolve().parent.parent
COMMIT = "0123456789abcdef0123456789abcdef01234567"
H200 = {
    "device": "cuda", "device_name": "NVIDIA H200", "gpu": "NVIDIA H200",
    "gpu_uuid": "GPU-a5c2f1cd-60e5-bab2-5ddb-54924571761c", "driver": "580.159.04",
    "cuda": "13.0", "torch": "2.11.0", "triton": "3.6.0", "kernbench": "0.1.0",
    "git": {"commit": COMMIT, "dirty": True}, "host": "gpu-box",
}
OTHER_GPU = {**H200, "device_name": "NVIDIA H100 80GB HBM3", "gpu_uuid": "GPU-0000"}


def _report(provenance: Any = lambda run: H200) -> AbReport:
    plan = manifest(rounds=4).model_copy(update={"device": "cuda"})
    return analyze(plan, outcomes(plan, slower_on_b, provenance))


def test_ab_json_keeps_the_machine_and_code_every_side_measured_on() -> None:
    where = _report().measured_on
    assert where is not None
    assert (where.device_name, where.gpu_uuid, where.driver, where.cuda, where.torch,
            where.triton, where.kernbench, where.commit, where.dirty, where.host) == (
        "NVIDIA H200", "GPU-a5c2f1cd-60e5-bab2-5ddb-54924571761c", "580.159.04", "13.0",
        "2.11.0", "3.6.0", "0.1.0", COMMIT, True, "gpu-box")
    assert where.differing == {} and len(where.runs) == 8


def test_every_output_says_the_gpu_and_the_code_instead_of_cuda(tmp_path: Path) -> None:
    report = _report()
    machine = ("NVIDIA H200 (GPU-a5c2f1cd-60e5-bab2-5ddb-54924571761c), driver 580.159.04, "
               "CUDA 13.0, torch 2.11.0, triton 3.6.0, host gpu-box")
    code = "kernbench 0.1.0 @ 0123456789 (dirty)"
    assert f"\nMeasured on {machine}; code: {code}.\n" in render_markdown(report, None)
    write_ab_html(report, tmp_path)
    assert f"<p>Measured on {machine}; code: {code}.</p>" in (
        tmp_path / "report.html").read_text()
    figure = ab_figure(report)
    assert figure is not None
    footnote = figure.get_supxlabel().splitlines()
    assert footnote[0] == f"measured on {machine}"
    assert footnote[1].startswith(f"{code}  ·  run 2026-01-01 00:00 UTC")
    assert "device cuda" not in figure.get_supxlabel()
    assert not any(line.startswith("warning") for line in closing_lines(report))


def test_sides_on_two_gpus_are_named_and_warned_of_everywhere(tmp_path: Path) -> None:
    report = _report(lambda run: OTHER_GPU if run == "r2_B" else H200)
    where = report.measured_on
    assert where is not None and where.device_name is None and where.gpu_uuid is None
    assert where.differing["device_name"] == [
        RunsWithValue(value="NVIDIA H200", runs=[r for r in where.runs if r != "r2_B"]),
        RunsWithValue(value="NVIDIA H100 80GB HBM3", runs=["r2_B"]),
    ]
    assert set(where.differing) == {"device_name", "gpu_uuid"}
    warning = ("the side runs were not measured alike (device NVIDIA H200 in round 1, r2_A, "
               "rounds 3-4 and NVIDIA H100 80GB HBM3 in r2_B; GPU UUID GPU-a5c2f1cd-60e5-"
               "bab2-5ddb-54924571761c in round 1, r2_A, rounds 3-4 and GPU-0000 in r2_B): "
               "their deltas mix the switch's effect with that difference")
    assert where_measured(report).warning == warning
    text = render_markdown(report, None)
    assert f"\n**Warning:** {warning}.\n" in text
    assert "Measured on device differs between runs (GPU UUID differs between runs)" in text
    write_ab_html(report, tmp_path)
    assert '<p class="warning"><b>Warning:</b> the side runs were not measured alike' in (
        tmp_path / "report.html").read_text()
    figure = ab_figure(report)
    assert figure is not None
    assert figure.get_supxlabel().splitlines()[-1] == (
        "WARNING: the runs differ in device, GPU UUID (see report.md)")
    assert f"warning: {warning}" in closing_lines(report)


def test_sides_at_two_commits_say_the_code_differs() -> None:
    later = {**H200, "git": {"commit": "f" * 40, "dirty": False}}
    report = _report(lambda run: later if run.startswith(("r3", "r4")) else H200)
    where = where_measured(report)
    assert where.code == "kernbench code differs between runs"
    assert where.warning is not None
    assert ("commit 0123456789 in rounds 1-2 and ffffffffff in rounds 3-4; tree state dirty "
            "in rounds 1-2 and clean in rounds 3-4") in where.warning


def test_runs_without_results_leave_whole_rounds_whole() -> None:
    report = _report()
    measured = [run for run in report.runs if run.name != "r3_B"]  # r3_B left no results
    names = [run.name for run in measured]
    assert runs_text(names, measured) == "rounds 1-4"
    assert runs_text(["r1_A", "r2_B", "r2_A", "r3_A"], measured) == "r1_A, rounds 2-3"


def test_an_ab_json_of_version_5_reads_as_not_recorded(tmp_path: Path) -> None:
    data = _report().model_dump(mode="json")
    del data["measured_on"]
    (tmp_path / "ab.json").write_text(json.dumps({**data, "schema_version": 5}))
    old = AB_FORMAT.read(tmp_path / "ab.json")
    assert old.schema_version == AB_VERSION == 6 and old.measured_on is None
    assert ("\nMeasured on cuda (not recorded: ab.json is older than version 6; `kernbench "
            "summarize` reads the machine from the side runs); code: kernbench not recorded.\n"
            ) in render_markdown(old, None)


def test_an_ab_without_provenance_says_what_it_lacks() -> None:
    where = where_measured(_report(lambda run: {}))
    assert where.machine == "cuda (model not recorded) (UUID not recorded)"
    assert where.code == "kernbench (version unknown), no git commit"
    assert where.warning is None


def test_summarize_of_a_committed_ab_resumed_at_another_commit_warns(tmp_path: Path) -> None:
    # The 2xH200 NCCL_PROTO A/B: rounds 3 (its A/A sides) to 6 ran two hours later, on the
    # next commit; its committed report.md (version 2) says nothing of that.
    folder = tmp_path / "ab"
    shutil.copytree(REPO / "benches/data/ab-nccl-proto-h200x2", folder)
    result = CliRunner().invoke(cli.app, ["summarize", str(folder)])
    assert result.exit_code == EXIT_OK, result.output
    report = AB_FORMAT.read(folder / "ab.json")
    assert report.measured_on is not None
    assert report.measured_on.device_name == "NVIDIA H200"
    assert set(report.measured_on.differing) == {"commit"}
    line = ("warning: the side runs were not measured alike (commit c85415c0e7 in rounds 1-2, "
            "r3_A, r3_B and eb9b3d50e6 in r3_AA1, r3_AA2, rounds 4-6): their deltas mix the "
            "switch's effect with that difference")
    lines = result.stderr.splitlines()
    verdicts = next(i for i, text in enumerate(lines) if text.startswith("verdicts:"))
    assert lines[verdicts + 1:] == [line]  # after the verdicts, as `ab` closes
    assert "NVIDIA H200 (UUID not recorded), driver 580.159.04" in (
        folder / "report.md").read_text()
