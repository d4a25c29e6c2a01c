"""CI (.ci/run) runs the README's test command, with the test tools pinned."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_ci_installs_torch_as_the_readme_says() -> None:
    readme = (REPO / "README.md").read_text()
    (torch_line,) = {part.strip() for line in readme.splitlines()
                     for part in line.split("&&") if part.strip().startswith("pip install torch")}
    assert "--index-url https://download.pytorch.org/whl/cpu" in torch_line  # no CUDA build
    assert torch_line in (REPO / ".ci" / "run").read_text().splitlines()


def test_ci_pins_every_tool_of_the_test_extra() -> None:
    tomllib = pytest.importorskip("tomllib")
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["test"]
    tools = {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower() for spec in extra}
    pins = dict(line.split("==") for line in (REPO / ".ci" / "constraints.txt").read_text()
                .splitlines() if line and not line.startswith("#"))
    assert set(pins) == tools
    assert "-c .ci/constraints.txt" in (REPO / ".ci" / "run").read_text()
