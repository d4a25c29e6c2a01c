"""README.md and docs/architecture.md against the code they describe: the command table's
commands and options, every module's place in the layer table, and the file versions."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import typer.main

from kernbench.ab.schedule import MANIFEST_FORMAT
from kernbench.cli import app
from kernbench.commands.validate import validate_files
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


# Every page a user reads for how to call kernbench: docs/gpu-runs.md is a log of what ran
# then, with the options of then, and docs/adr/ are records, so neither is held to today.
DOC_PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*/README.md"),
     *(ROOT / "configs").glob("*/README.md"), *(ROOT / "benches").glob("*.yaml")]
)
DOC_PAGES = [page for page in DOC_PAGES if page.name != "gpu-runs.md"]
# A command as a page writes it: in backticks, or a line of a code block (a `\` continues it).
INLINE_COMMAND = re.compile(r"`(kernbench [a-z][^`]*)`")
BLOCK_COMMAND = re.compile(r"^(?: {4}|\t)\s*(?:[A-Z_]+=\S+ )*(kernbench [a-z].*)$", re.MULTILINE)


def written_commands(text: str) -> list[tuple[str, set[str]]]:
    """Each `kernbench CMD ...` a page writes, with the options it gives CMD."""
    text = re.sub(r"\\\n\s*", " ", text)
    commands = INLINE_COMMAND.findall(text) + BLOCK_COMMAND.findall(text)
    return [
        (command.split()[1], set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", command)))
        for command in commands
    ]


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_command_a_page_writes_is_one_kernbench_takes(page: Path) -> None:
    options = cli_options()
    wrong = [(name, sorted(written - options.get(name, set())) or "no such command")
             for name, written in written_commands(page.read_text())
             if name not in options or written - options[name]]
    assert wrong == []


def test_the_command_finder_sees_commands_in_code_blocks_and_backticks() -> None:
    page = ("Run `kernbench plan --bench x --only a=1` first, then\n\n"
            "    MILESTONE_FAST=1 kernbench run --bench x \\\n        --out y\n")
    assert written_commands(page) == [("plan", {"--bench", "--only"}),
                                      ("run", {"--bench", "--out"})]


def readme_yaml_blocks() -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", README, re.MULTILINE | re.DOTALL)


def test_the_readme_bench_files_validate_as_written_but_for_the_data_they_name(
    tmp_path: Path,
) -> None:
    # The first names data/my-gemm.json.xz, committed results a reader does not have yet;
    # the second is an op bench, which validate can only check with torch.
    gemm, topk = readme_yaml_blocks()
    assert "\ndata: data/my-gemm.json.xz" in gemm
    (tmp_path / "my-gemm.yaml").write_text(re.sub(r"(?m)^data: .*\n", "", gemm))
    (tmp_path / "topk.yaml").write_text(topk)
    names = ["my-gemm", "topk"] if importlib.util.find_spec("torch") else ["my-gemm"]
    outcomes = validate_files([tmp_path / f"{name}.yaml" for name in names])
    assert [(outcome.path.stem, outcome.error) for outcome in outcomes] == [
        (name, None) for name in names
    ]


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
