"""`kernbench schema`: both copies written and checked, one printed, none written outside a
checkout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import invoke, new_project

from kernbench.commands import schema as schema_files
from kernbench.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from kernbench.spec import discovery

REPO = Path(__file__).resolve().parent.parent
PACKAGED = Path("kernbench", "data", "schemas")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernbench checkout of its own, with both copies of the committed schemas."""
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    shutil.copytree(REPO / "schemas", root / "schemas")
    shutil.copytree(REPO / PACKAGED, root / PACKAGED)
    return root


def test_schema_check_passes_on_the_committed_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, err = invoke("schema", "--check")
    assert (code, out, err) == (EXIT_OK, "schemas up to date\n", "")


def test_the_two_committed_copies_are_the_same() -> None:
    for name in schema_files.SCHEMAS:
        assert (REPO / "schemas" / name).read_text() == (REPO / PACKAGED / name).read_text()


def test_schema_check_reports_a_changed_model(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke("schema", "--check")[0] == EXIT_OK
    original = schema_files.SCHEMAS["hardware.schema.json"]

    def changed_model() -> dict[str, object]:
        return {**original(), "title": "Changed"}

    monkeypatch.setitem(schema_files.SCHEMAS, "hardware.schema.json", changed_model)
    code, out, err = invoke("schema", "--check")
    assert (code, out) == (EXIT_FAILED, "")
    assert err.splitlines() == [
        "drifted: schemas/hardware.schema.json (run kernbench schema)",
        "drifted: kernbench/data/schemas/hardware.schema.json (run kernbench schema)",
    ]
    code, out, _ = invoke("schema")
    assert code == EXIT_OK
    assert "wrote kernbench/data/schemas/hardware.schema.json" in out.splitlines()
    assert invoke("schema", "--check")[0] == EXIT_OK


def test_schema_check_reports_an_edited_or_missing_file(project: Path) -> None:
    bench_schema = project / "schemas" / "bench.schema.json"
    bench_schema.write_text(bench_schema.read_text().replace('"name"', '"nom"'))
    (project / PACKAGED / "results.schema.json").unlink()
    code, _, err = invoke("schema", "--check")
    assert code == EXIT_FAILED
    assert err.splitlines() == [
        "drifted: schemas/bench.schema.json (run kernbench schema)",
        "drifted: kernbench/data/schemas/results.schema.json (run kernbench schema)",
    ]


def test_written_schemas_are_sorted_with_a_trailing_newline(project: Path) -> None:
    shutil.rmtree(project / "schemas")
    invoke("schema")
    text = (project / "schemas" / "bench.schema.json").read_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text == schema_files.render(schema_files.SCHEMAS["bench.schema.json"]())


@pytest.mark.parametrize("name", ["bench", "bench.schema.json"])
def test_print_writes_one_schema_to_stdout(project: Path, name: str) -> None:
    code, out, _ = invoke("schema", "--print", name)
    assert code == EXIT_OK
    assert out == schema_files.render(schema_files.bench_json_schema())
    assert json.loads(out)["title"] == "Bench"


def test_print_an_unknown_schema_is_one_line(project: Path) -> None:
    code, out, err = invoke("schema", "--print", "bnech")
    assert (code, out) == (EXIT_USAGE, "")
    assert err == "--print: unknown schema 'bnech'; known: bench, hardware, results\n"


def test_outside_a_checkout_check_covers_the_shipped_copy_and_writing_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed wheel: no checkout above the working directory, none holding the package.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(discovery, "source_tree", lambda: None)
    assert schema_files.folders_to_check() == [schema_files.packaged_schema_dir()]
    code, out, _ = invoke("schema", "--check")
    assert (code, out) == (EXIT_OK, "schemas up to date\n")
    code, out, err = invoke("schema")
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        "kernbench schema: not in a kernbench checkout, so there is nothing to write; "
        "`kernbench schema --print bench` prints the bench schema\n"
    )
    assert list(tmp_path.iterdir()) == []
