"""README.md and docs/architecture.md against the code they describe: the command table's
commands and options, every module's place in the layer table, and the file versions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from kernbench.ab.schedule import MANIFEST_FORMAT
from kernbench.cli import app
from kernbench.execute.options import RUN_JSON
from kernbench.results.ab import AB_FORMAT
from kernbench.results.model import RESULTS_FORMAT

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kernbench"
README = (ROOT / "README.md").read_text()
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()
COMMAND = re.compile(r"`kernbench ([a-z]+)([^`]*)`")


def cli_options() -> dict[str, set[str]]:
    """Each command's option names, `--no-x` forms included."""
    group = typer.main.get_command(app)
    return {
        name: {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]}
        for name, command in group.commands.items()  # type: ignore[attr-defined]
    }


def readme_commands() -> list[tuple[str, set[str]]]:
    """Each command the README's command table shows, with the options it writes."""
    lines = README.splitlines()
    rows = [line.split(" | ")[0] for line in lines if line.startswith("| `kernbench ")]
    return [
        (name, set(re.findall(r"--[a-z][a-z-]*", rest)))
        for row in rows for name, rest in COMMAND.findall(row)
    ]


def test_the_readme_command_table_names_every_command() -> None:
    assert {name for name, _ in readme_commands()} == set(cli_options())


def test_every_option_in_the_readme_command_table_is_one_its_command_takes() -> None:
    options = cli_options()
    unknown = [(name, opt) for name, written in readme_commands()
               for opt in sorted(written - options[name])]
    assert unknown == []


def layer_rows() -> dict[str, str]:
    """docs/architecture.md's layer table: each package's row, by its folder name."""
    rows = re.findall(r"^\| `([a-z_]+)/` \| (.*)$", ARCHITECTURE, re.MULTILINE)
    return dict(rows)


PACKAGES = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file())


@pytest.mark.parametrize("package", PACKAGES)
def test_the_layer_table_names_each_module_of_a_package_in_its_row(package: str) -> None:
    row = layer_rows()[package]
    modules = sorted(path.name for path in (PACKAGE / package).glob("*.py"))
    assert [name for name in modules if name != "__init__.py" and f"`{name}" not in row] == []


@pytest.mark.parametrize("package", PACKAGES)
def test_each_module_a_row_names_exists(package: str) -> None:
    row = layer_rows()[package]
    named = re.findall(r"`((?:[a-z_]+/)?[a-z_]+\.py)", row)  # `x.py` or `pkg/x.py`
    places = [PACKAGE / package, PACKAGE]  # a bare name: the package's, or a top-level one
    gone = [name for name in named
            if not any((place / name).is_file() for place in places)]
    assert gone == []


def test_the_architecture_names_every_top_level_module() -> None:
    modules = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert [name for name in modules if f"`{name}`" not in ARCHITECTURE] == []


@pytest.mark.parametrize(("file", "version"), [
    ("`results.json`", RESULTS_FORMAT.version),
    ("`run.json`", RUN_JSON.version),
    ("`ab-run.json`", MANIFEST_FORMAT.version),
    ("`ab.json`", AB_FORMAT.version),
])
def test_the_files_table_gives_each_format_its_current_version(file: str, version: int) -> None:
    row = next(line for line in ARCHITECTURE.splitlines() if line.startswith(f"| {file}"))
    assert row.split(" | ")[2].split()[0] == str(version)


def test_the_readme_names_every_shipped_bench() -> None:
    names = sorted(path.stem for path in (ROOT / "benches").glob("*.yaml"))
    assert [name for name in names if f"`{name}`" not in README] == []
