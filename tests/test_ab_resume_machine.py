"""`ab --resume` on this machine (ab/resume_machine.py): kept sides of another device
model are refused before any side runs (unless --force); another commit, driver or GPU of
the model is said in one line, in summarize's wording."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from ab_fixtures.sides import BENCH, Sides
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab import resume_machine
from kernbench.ab.run import resume_ab, run_ab
from kernbench.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute import gpus
from kernbench.results.provenance import collect, cpu_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"
BEGUN_ON = {"device": "cpu", "device_name": "NVIDIA H200", "host": "box",
            "git": {"commit": COMMIT, "dirty": False}}


def interrupted(tmp_path: Path, begun_on: dict[str, Any]) -> Path:
    bench = tmp_path / "fake-ab.yaml"
    bench.write_text(BENCH)
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu",
                     run_side=Sides(stop="r2_B", provenance=begun_on), echo=lambda line: None)
    assert outcome.exit_code == EXIT_INTERRUPTED
    return tmp_path / "ab"


def here(monkeypatch: pytest.MonkeyPatch, provenance: dict[str, Any]) -> None:
    monkeypatch.setattr(resume_machine, "this_machine", lambda device: provenance)


def test_a_resume_on_another_device_model_is_refused_before_any_side_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = interrupted(tmp_path, BEGUN_ON)
    here(monkeypatch, {**BEGUN_ON, "device_name": "NVIDIA H100 80GB HBM3"})
    sides = Sides(provenance=BEGUN_ON)
    with pytest.raises(UserError) as refused:
        resume_ab(folder, run_side=sides, echo=lambda line: None)
    assert str(refused.value) == (
        "--resume: the sides kept were measured on NVIDIA H200, this machine's device is "
        "NVIDIA H100 80GB HBM3: their verdicts would mix two machines; --force resumes "
        "anyway, or start a new A/B")
    assert sides.ran == [] and (folder / "r2_B" / "run.json").is_file()  # left as it was
    result = CliRunner().invoke(cli.app, ["ab", "--resume", str(folder)])
    assert (result.exit_code, result.stderr) == (EXIT_USAGE, f"{refused.value}\n")


def test_this_machine_is_the_cpu_a_cpu_ab_measures_on(tmp_path: Path) -> None:
    # A GPU's sides resumed on a CPU A/B's machine: refused without faking this machine.
    # A CPU side's provenance is known whole here, as the side will record it.
    assert resume_machine.this_machine("cpu") == collect("cpu")
    assert resume_machine.this_machine("cpu")["device_name"] == cpu_model()
    folder = interrupted(tmp_path, BEGUN_ON)
    with pytest.raises(UserError) as refused:  # not `match`: a model name reads as a regex
        resume_ab(folder, run_side=Sides(provenance=BEGUN_ON), echo=lambda line: None)
    assert str(refused.value) == (
        f"--resume: the sides kept were measured on NVIDIA H200, this machine's device is "
        f"{cpu_model()}: their verdicts would mix two machines; --force resumes anyway, or "
        "start a new A/B")


def test_this_gpu_machine_is_listed_by_one_nvidia_smi_call(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def nvidia_smi(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return subprocess.CompletedProcess(
            argv, 0, stdout="0, NVIDIA H200, GPU-aaaa-0000, 570.86.15\n")

    monkeypatch.setattr(gpus.subprocess, "run", nvidia_smi)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    found = resume_machine.this_machine("cuda")
    assert (found["device_name"], found["gpu_uuid"], found["driver"]) == (
        "NVIDIA H200", "GPU-aaaa-0000", "570.86.15")
    assert len(calls) == 1


@pytest.mark.parametrize(("change", "force", "difference"), [
    # another device model runs only with --force
    ({"device_name": "NVIDIA H100 80GB HBM3"}, True,
     "device NVIDIA H200 in round 1 and NVIDIA H100 80GB HBM3 in this resume"),
    # the same model on another commit runs without it
    ({"git": {"commit": "f" * 40, "dirty": False}}, False,
     "commit 0123456789 in round 1 and ffffffffff in this resume"),
], ids=["another-model-forced", "another-commit"])
def test_a_resume_on_another_machine_or_commit_runs_with_one_line_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict, force: bool, difference: str
) -> None:
    folder = interrupted(tmp_path, BEGUN_ON)
    moved = {**BEGUN_ON, **change}
    here(monkeypatch, moved)
    sides = Sides(provenance=moved)
    lines: list[str] = []
    assert resume_ab(folder, run_side=sides, echo=lines.append, force=force).exit_code == EXIT_OK
    assert sides.ran == ["r2_B", "r2_A", "r3_A", "r3_B"]
    assert lines[0] == (
        f"note: resuming on this machine: the side runs were not measured alike ({difference}): "
        "their deltas mix the switch's effect with that difference")


def test_the_same_machine_resumes_without_a_note_and_force_needs_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = interrupted(tmp_path, BEGUN_ON)
    here(monkeypatch, {**BEGUN_ON, "host": None})  # a fact not known here: not compared
    lines: list[str] = []
    sides = Sides(provenance=BEGUN_ON)
    assert resume_ab(folder, run_side=sides, echo=lines.append).exit_code == EXIT_OK
    assert not [line for line in lines if "resuming on this machine" in line]
    result = CliRunner().invoke(cli.app, ["ab", "--bench", "x", "--force"])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == "--force: only with --resume, to resume on another device model\n"
