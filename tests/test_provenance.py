"""Provenance: git's exit code honoured, the version from the source tree or the installed
metadata, read before the run writes anything; the committed data names both."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernbench.commands import run as run_command
from kernbench.execute.options import RunOptions
from kernbench.execute.run_folder import RunFolder
from kernbench.results import provenance
from kernbench.results.jsonio import read_json
from kernbench.spec.loader import load_bench

REPO = Path(__file__).resolve().parent.parent
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=folder, check=True, capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "tracked.txt").write_text("one\n")
    git(folder, "add", "tracked.txt")
    git(folder, "commit", "-q", "-m", "first")
    return folder


@needs_git
def test_a_commit_and_whether_tracked_files_changed(repo: Path) -> None:
    state = provenance.git_state(repo)
    assert re.fullmatch(r"[0-9a-f]{40}", state["commit"]) and state["dirty"] is False
    (repo / "untracked.txt").write_text("runs and pins of a run are not edits\n")
    assert provenance.git_state(repo)["dirty"] is False
    (repo / "tracked.txt").write_text("two\n")
    assert provenance.git_state(repo) == {"commit": state["commit"], "dirty": True}


@needs_git
def test_no_commit_is_no_commit_never_head(tmp_path: Path, repo: Path) -> None:
    plain = tmp_path / "plain"  # a tree copied without its .git
    plain.mkdir()
    assert provenance.git_state(plain) == {}
    empty = tmp_path / "empty"  # `git rev-parse HEAD` prints "HEAD" here, and fails
    empty.mkdir()
    git(empty, "init", "-q")
    assert provenance.git_state(empty) == {}
    inside = repo / "vendored"  # a copy inside someone else's repository
    inside.mkdir()
    assert provenance.git_state(inside) == {}


def test_no_git_installed_is_no_commit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    assert provenance.git_state(repo) == {}


def test_an_installed_wheel_has_no_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "source_tree", lambda: None)
    provenance.git_commit.cache_clear()
    try:
        assert provenance.git_commit() == {}
    finally:
        provenance.git_commit.cache_clear()


def test_the_version_of_a_source_tree_then_of_the_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nversion = "9"\n\n[project]\nname = "kernbench"\nversion = "1.2.3"\n'
    )
    monkeypatch.setattr(provenance, "source_tree", lambda: tmp_path)
    assert provenance.kernbench_version() == "1.2.3"
    monkeypatch.setattr(provenance, "source_tree", lambda: None)
    monkeypatch.setattr(provenance, "package_version", lambda name: f"{name} 0.9")
    assert provenance.kernbench_version() == "kernbench 0.9"
    assert provenance.pyproject_version(tmp_path / "missing.toml") is None


def test_this_checkout_reports_its_own_version() -> None:
    assert provenance.kernbench_version() == provenance.pyproject_version(REPO / "pyproject.toml")


def test_provenance_is_read_before_the_run_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    monkeypatch.setattr(run_command.provenance, "collect",
                        lambda device: events.append("collect") or {"read": "first"})
    monkeypatch.setattr(run_command, "execute", lambda run: events.append("execute") or [])

    def finish(run: RunFolder, cells: list, complete: bool, started: dict | None = None) -> None:
        events.append(f"finish with {started}")
        raise SystemExit(0)

    monkeypatch.setattr(run_command, "finish", finish)
    bench = tmp_path / "b.yaml"
    bench.write_text("name: b\ndescription: d\nkernel: sleep\n")
    options = RunOptions(bench_path=bench, spec_hash="x", device="cpu", rounds=1,
                         project_pins=tmp_path / "pins" / "b.json")
    with pytest.raises(SystemExit):
        run_command.measure(RunFolder(options, load_bench(bench), tmp_path / "out"))
    assert events == ["collect", "execute", "finish with {'read': 'first'}"]


def committed_results() -> list[Path]:
    data = REPO / "benches" / "data"
    return [*sorted(data.rglob("results.json*")), *sorted(data.glob("milestone-*.json*"))]


def test_the_committed_data_names_a_commit_and_a_version() -> None:
    files = committed_results()
    assert len(files) > 100
    for path in files:
        prov = read_json(path)["provenance"]
        assert prov["kernbench"] == "0.1.0", path
        assert re.fullmatch(r"[0-9a-f]{40}", prov["git"]["commit"]), path
        if prov["git"]["dirty"] is None:  # filled in from the run records, and said so
            assert "docs/gpu-runs.md" in prov["recovered"], path


def test_commands_and_bench_paths_are_recorded_relative_to_the_project():
    from kernbench.results.provenance import portable_command, portable_path
    from kernbench.spec.discovery import project_root

    bench = project_root() / "benches" / "ab-drift.yaml"
    assert portable_path(bench) == "benches/ab-drift.yaml"
    assert portable_path("/elsewhere/x.yaml") == "/elsewhere/x.yaml"
    argv = [str(project_root() / "kernbench" / "__main__.py"), "run", "--bench", str(bench)]
    assert portable_command(argv) == ["kernbench", "run", "--bench", "benches/ab-drift.yaml"]


def test_the_gpu_uuid_is_recorded_as_nvidia_smi_writes_it() -> None:
    # torch's _CudaDeviceProperties.uuid prints without nvidia-smi's `GPU-` (seen on an
    # H200 with torch 2.11: a5c2f1cd-..., nvidia-smi -L: GPU-a5c2f1cd-...).
    props = SimpleNamespace(uuid="a5c2f1cd-60e5-bab2-5ddb-54924571761c")
    assert provenance.gpu_uuid(props) == "GPU-a5c2f1cd-60e5-bab2-5ddb-54924571761c"
    assert provenance.gpu_uuid(SimpleNamespace()) is None


def test_utc_now_writes_a_given_time_as_every_recorded_time_is_written() -> None:
    moment = dt.datetime(2026, 12, 4, 9, 5, 7, 123456, tzinfo=dt.timezone.utc)
    assert provenance.utc_now(moment) == "2026-12-04T09:05:07Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", provenance.utc_now())
