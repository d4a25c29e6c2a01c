"""results/folder_paths.py: a folder's JSON records its paths relative to the project
holding the folder and resolves them against that same project, never above it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernbench.execute.options import load_options
from kernbench.results.folder_paths import recorded_path, resolved_path


def project(folder: Path) -> Path:
    (folder / "benches" / "pins").mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "kernbench"\n')
    (folder / "benches" / "b.yaml").write_text(f"# {folder.name}\n")
    return folder


def test_a_path_missing_in_the_folders_project_stays_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # q/benches/pins/a.json lies above the project q/P: a resume of a run in P must not read
    # or write it (a worktree inside a checkout would take the checkout's pins).
    (tmp_path / "q" / "benches" / "pins").mkdir(parents=True)
    (tmp_path / "q" / "benches" / "pins" / "a.json").write_text("{}")
    inner = project(tmp_path / "q" / "P")
    monkeypatch.chdir(tmp_path)
    assert resolved_path("benches/pins/a.json", inner / "runs" / "x") == str(
        inner / "benches" / "pins" / "a.json")


def test_a_folder_in_a_nested_project_records_and_resolves_against_that_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outer = project(tmp_path / "outer")
    inner = project(outer / "inner")
    folder = inner / "runs" / "x"
    monkeypatch.chdir(outer)  # the working folder's project is the outer one
    for bench in (outer / "benches" / "b.yaml", inner / "benches" / "b.yaml"):
        recorded = recorded_path(str(bench), folder)
        assert resolved_path(recorded, folder) == str(bench)
    assert recorded_path(str(inner / "benches" / "b.yaml"), folder) == "benches/b.yaml"


def test_a_folder_no_project_holds_finds_its_paths_above_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a committed A/B copied out of its checkout: no project anchors it, the copy's
    # surroundings may still hold what it names
    (tmp_path / "copy" / "benches").mkdir(parents=True)
    (tmp_path / "copy" / "benches" / "b.yaml").write_text("")
    monkeypatch.chdir(project(tmp_path / "elsewhere"))
    assert resolved_path("benches/b.yaml", tmp_path / "copy" / "ab" / "r1_A") == str(
        tmp_path / "copy" / "benches" / "b.yaml")


COMMITTED_AB = Path(__file__).resolve().parents[1] / "benches" / "data" / "ab-tf32-h200"


def test_a_committed_ab_copied_out_reads_its_own_pins_and_timers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the sides record benches/data/ab-tf32-h200/pins.json; the copy holds no benches/ tree,
    # and the checkout the package runs from does hold that path: the copy's own file wins
    copy = tmp_path / "ab-tf32-h200"
    shutil.copytree(COMMITTED_AB, copy)
    monkeypatch.chdir(tmp_path)
    sides = sorted(side for side in copy.iterdir() if (side / "run.json").is_file())
    assert sides
    for side in sides:
        options = load_options(side)
        assert options.pins == copy / "pins.json"
        assert options.timers == copy / "timers.json"


def test_a_renamed_copy_still_finds_the_file_by_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "renamed" / "r1_A").mkdir(parents=True)
    (tmp_path / "renamed" / "pins.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert resolved_path("benches/data/ab-x/pins.json", tmp_path / "renamed" / "r1_A") == str(
        tmp_path / "renamed" / "pins.json")


def test_an_ab_relative_path_in_a_project_is_found_in_the_folders_ancestors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # older packs wrote a side's pins as "pins.json", relative to the A/B's folder
    inner = project(tmp_path / "P")
    (inner / "runs" / "ab" / "r1_A").mkdir(parents=True)
    (inner / "runs" / "ab" / "pins.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert resolved_path("pins.json", inner / "runs" / "ab" / "r1_A") == str(
        inner / "runs" / "ab" / "pins.json")
    # a path in the project's root is taken there first, and a missing one stays there
    (inner / "pins.json").write_text("{}")
    assert resolved_path("pins.json", inner / "runs" / "ab" / "r1_A") == str(inner / "pins.json")
    assert resolved_path("benches/pins/new.json", inner / "runs" / "ab" / "r1_A") == str(
        inner / "benches" / "pins" / "new.json")
