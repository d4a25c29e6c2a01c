"""ab-run.json names the bench, its folders and its committed pins relative to the project
when the A/B's folder lies in it (a committed A/B names no machine's folders), and a
resume finds them from the A/B's folder, wherever the checkout moved and whatever the
working folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ab_fixtures.sides import BENCH, Sides
from cli_helpers import new_project

from kernbench.ab.run import resume_ab, run_ab
from kernbench.ab.schedule import load_manifest
from kernbench.ab.sides import SideRequest
from kernbench.errors import EXIT_INTERRUPTED, EXIT_OK
from kernbench.execute.pins import save_pins

ROOT = Path(__file__).resolve().parents[1]

class BenchSides(Sides):
    """`Sides` that also keep the --bench each side's command was given."""

    def __init__(self, stop: str | None = None) -> None:
        super().__init__(stop)
        self.benches: set[str] = set()

    def __call__(self, request: SideRequest) -> int:
        self.benches.add(request.command[request.command.index("--bench") + 1])
        return super().__call__(request)


def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    (root / "benches" / "fake-ab.yaml").write_text(BENCH)
    save_pins(root / "benches" / "pins" / "fake-ab.json", {})
    return root


def test_an_ab_in_the_project_keeps_project_paths_and_resumes_after_a_move_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, monkeypatch)
    outcome = run_ab("fake-ab", out=Path("runs/ab"), device="cpu", run_side=Sides("r2_A"),
                     echo=lambda _: None)
    assert outcome.exit_code == EXIT_INTERRUPTED
    text = (root / "runs" / "ab" / "ab-run.json").read_text()
    recorded = json.loads(text)
    assert (recorded["bench_path"], recorded["pins_from"]) == (
        "benches/fake-ab.yaml", "benches/pins/fake-ab.json")
    assert str(tmp_path) not in text

    moved = root.rename(tmp_path / "moved")
    monkeypatch.chdir(ROOT)  # another project: nothing of the moved one is found from here
    sides = BenchSides()
    outcome = resume_ab(moved / "runs" / "ab", run_side=sides, echo=lambda _: None)
    assert outcome.exit_code == EXIT_OK
    assert sides.ran == ["r2_A", "r3_A", "r3_B"]
    assert sides.benches == {str(moved / "benches" / "fake-ab.yaml")}
    assert load_manifest(moved / "runs" / "ab").pins_from == \
        str(moved / "benches" / "pins" / "fake-ab.json")


def test_an_ab_outside_the_project_keeps_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, monkeypatch)
    run_ab("fake-ab", out=tmp_path / "elsewhere", device="cpu", run_side=Sides(),
           echo=lambda _: None)
    recorded = json.loads((tmp_path / "elsewhere" / "ab-run.json").read_text())
    assert recorded["bench_path"] == str((root / "benches" / "fake-ab.yaml").resolve())


def test_a_committed_ab_folder_finds_its_bench_from_any_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    manifest = load_manifest(ROOT / "benches" / "data" / "ab-gemm-variants-h200-isolated")
    assert manifest.bench_path == str(ROOT / "benches" / "milestone-1h-gemm.yaml")
