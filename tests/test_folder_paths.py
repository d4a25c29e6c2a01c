"""results/folder_paths.py: a folder's JSON records its paths relative to the project
holding the folder and resolves them against that same project, never above it."""

from __future__ import annotations

from pathlib import Path

import pytest

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
