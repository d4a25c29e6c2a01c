"""run.json names the bench (and its pins) relative to the project when the run's folder
lies in it, as ab-run.json does (results/folder_paths.py): a committed run or A/B side
names no machine's folders, and a resume finds the bench from the run's folder, wherever
the checkout moved and whatever the working folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import invoke, new_project

from kernbench.errors import EXIT_OK
from kernbench.execute.options import load_options

ROOT = Path(__file__).resolve().parents[1]
QUICK = "axes: {work_us: [1]}\nrounds: 1\ntimer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}\n"


def test_a_run_in_the_project_keeps_project_paths_and_resumes_after_a_move_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=QUICK)
    code, _, stderr = invoke("run", "--bench", "alpha", "--out", "runs/alpha", "--device", "cpu",
                             "--no-figures")
    assert code == EXIT_OK, stderr
    text = (root / "runs" / "alpha" / "run.json").read_text()
    recorded = json.loads(text)
    assert (recorded["bench_path"], recorded["project_pins"]) == (
        "benches/alpha.yaml", "benches/pins/alpha.json")
    assert str(tmp_path) not in text

    moved = root.rename(tmp_path / "moved")
    monkeypatch.chdir(ROOT)  # another project: nothing of the moved one is found from here
    options = load_options(moved / "runs" / "alpha")
    assert (options.bench_path, options.project_pins) == (
        moved / "benches" / "alpha.yaml", moved / "benches" / "pins" / "alpha.json")
    code, _, stderr = invoke("run", "--resume", str(moved / "runs" / "alpha"))
    assert code == EXIT_OK, stderr


def test_a_run_outside_the_project_keeps_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=QUICK)
    code, _, stderr = invoke("run", "--bench", "alpha", "--out", str(tmp_path / "elsewhere"),
                             "--device", "cpu", "--no-figures")
    assert code == EXIT_OK, stderr
    recorded = json.loads((tmp_path / "elsewhere" / "run.json").read_text())
    assert recorded["bench_path"] == str((root / "benches" / "alpha.yaml").resolve())


def test_a_committed_sides_run_json_finds_its_bench_and_pins_from_any_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ab = ROOT / "benches" / "data" / "ab-gemm-variants-h200-isolated"
    options = load_options(ab / "r1_A")
    assert (options.bench_path, options.pins) == (
        ROOT / "benches" / "milestone-1h-gemm.yaml", ab / "pins.json")


def test_every_committed_side_names_its_ab_folders_pins_even_beside_pins_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sides committed with "pins": "pins.json" (relative to the A/B folder) were found by
    # searching up from the side: a side holding a pins.json of its own (run1's r1_B) took
    # that one instead. They now name the A/B's pins relative to the project, like the rest.
    monkeypatch.chdir(tmp_path)
    sides = sorted(ROOT.glob("benches/data/**/ab-run.json"))
    assert (ROOT / "benches/data/ab-gemm-variants-h200-run1/r1_B/pins.json").is_file()
    checked = 0
    for manifest in sides:
        for run_json in sorted(manifest.parent.glob("*/run.json")):
            options = load_options(run_json.parent)
            if options.pins is not None:
                assert options.pins == manifest.parent / "pins.json", run_json
                checked += 1
            if options.timers is not None:
                assert options.timers.is_file(), run_json
    assert checked > 500
