"""CI (.ci/run) runs the README's test command, with the test tools pinned."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def torch_pin(text: str) -> str:
    (pin,) = set(re.findall(r"^\s*pip install '?torch==([^'\s]+)", text, re.MULTILINE))
    return str(pin)


def test_ci_installs_the_readmes_torch_as_its_cpu_build() -> None:
    readme = torch_pin((REPO / "README.md").read_text().replace(" && ", "\n"))
    assert torch_pin((REPO / ".ci" / "run").read_text()) == f"{readme}+cpu"  # never CUDA's


def test_ci_pins_every_tool_of_the_test_extra() -> None:
    tomllib = pytest.importorskip("tomllib")
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["test"]
    tools = {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower() for spec in extra}
    pins = dict(line.split("==") for line in (REPO / ".ci" / "constraints.txt").read_text()
                .splitlines() if line and not line.startswith("#"))
    assert set(pins) == tools
    assert "-c .ci/constraints.txt" in (REPO / ".ci" / "run").read_text()
