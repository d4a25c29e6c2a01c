"""The pin modes are declared once (execute/pins.py); every other place derives them."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.schedule import SideRun
from kernbench.errors import EXIT_USAGE
from kernbench.execute.journal import Task
from kernbench.execute.options import RunOptions
from kernbench.execute.pins import PIN_MODE_HELP, PIN_MODES, PinMode


def test_every_mode_is_described_once() -> None:
    assert PIN_MODES == ("auto", "record", "replay")
    assert tuple(PIN_MODE_HELP) == PIN_MODES


@pytest.mark.parametrize("model", [RunOptions, Task, SideRun])
def test_the_models_accept_exactly_the_declared_modes(model: type) -> None:
    annotation = model.model_fields["pins_mode"].annotation
    assert annotation == PinMode


def test_run_help_describes_each_mode() -> None:
    result = CliRunner().invoke(cli.app, ["run", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.stdout.split())
    for mode, does in PIN_MODE_HELP.items():
        assert f"{mode}: {does}" in text


def test_an_unknown_mode_is_refused_naming_the_declared_ones(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli.app, [
        "run", "--bench", "ab-synthetic", "--device", "cpu", "--pins-mode", "both",
        "--out", str(tmp_path / "out"),
    ])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == "--pins-mode: 'both' is not one of auto, record, replay\n"
