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


def test_a_name_of_no_bench_is_still_not_found(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    new_project(tmp_path, monkeypatch)
    code, _, err = invoke("validate", "alpah")
    assert (code, err) == (EXIT_USAGE, "alpah: file not found\n")
