"""`kernbench validate NAME` checks the bench so named, as `run --bench NAME` finds it: a
user of a wheel cannot know the path of a shipped bench under site-packages. Before, a
name was taken for a path: `validate milestone-1h-gemm` said `file not found`, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke, new_project

from kernbench.errors import EXIT_USAGE


def test_validate_takes_a_bench_name_as_run_does(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    new_project(tmp_path, monkeypatch)
    assert invoke("validate", "alpha") == (0, f"ok {Path('benches', 'alpha.yaml')}\n", "")


def test_a_name_of_no_bench_is_refused_as_run_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not `alpah: file not found`, which sent a user looking for a file."""
    new_project(tmp_path, monkeypatch)
    code, _, err = invoke("validate", "alpah")
    assert (code, err) == (EXIT_USAGE, "unknown bench 'alpah' (nor a file or folder here); "
                           "did you mean 'alpha'? known: alpha, beta\n")
    code, _, err = invoke("validate", "gone.yaml")  # a path: not a name
    assert (code, err) == (EXIT_USAGE, "gone.yaml: file not found\n")


def test_a_bench_of_the_working_folder_is_named_by_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`validate NAME` from the bench's own folder, outside the searched ones: where the
    file is, given as validate takes it (no `--bench`)."""
    new_project(tmp_path, monkeypatch)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "softmax.yaml").write_text("name: my-softmax\ndescription: d\nkernel: sleep\n")
    monkeypatch.chdir(mine)
    code, _, err = invoke("validate", "my-softmax")
    assert code == EXIT_USAGE
    assert err.endswith(": give --bench-dir ., or the file: softmax.yaml\n"), err
