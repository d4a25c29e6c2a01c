"""The tree stays ruff-clean and the package mypy-clean (settings in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff comes with the [test] extra")
def test_ruff_finds_nothing() -> None:
    done = subprocess.run(["ruff", "check", "--no-cache", str(REPO)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mypy") is None, reason="mypy comes with the [test] extra")
def test_mypy_finds_nothing() -> None:
    done = subprocess.run(["mypy"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
