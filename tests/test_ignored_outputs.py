"""What a command writes into a checkout, from whichever folder of it, is git-ignored: the
tree stays clean (`git status`), as after the README's main job."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs a git checkout")
@pytest.mark.parametrize("written", [
    "runs/milestone-1h-gemm/20261203T133414Z/results.json",  # `kernbench run` at the top
    "benches/runs/milestone-1h-gemm/20261203T133414Z/results.json",  # from benches/
    "docs/runs/ab_KB_DEMO_SLOW_20261203T133414Z/ab.json",  # `kernbench ab` from docs/
])
def test_a_runs_folder_anywhere_in_the_checkout_is_ignored(written: str) -> None:
    done = subprocess.run(["git", "check-ignore", "-q", "--no-index", written], cwd=REPO)
    assert done.returncode == 0, f"{written} would show in git status"
