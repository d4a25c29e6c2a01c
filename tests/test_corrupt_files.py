"""Damaged files are one line or a cell to measure again, never a traceback: journal
entries, the cell in flight, run.json; results files handed to render, merge, fast mode."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import nap_bench
from typer.testing import CliRunner

from kernbench import cli
from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute.journal import (
    Damaged,
    current_path,
    journal_path,
    load_entry,
    read_current,
    read_entry,
)
from kernbench.render import render_results
from kernbench.results import model as results_io

runner = CliRunner()


def sleep_bench(folder: Path, extra: str = "") -> Path:
    return nap_bench(folder, "rounds: 2\n" + extra, work_us=(1, 2, 3))


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of 3 cells over 2 rounds, to copy and damage."""
    folder = tmp_path_factory.mktemp("measured")
    bench = sleep_bench(folder / "b")
    assert run(RunRequest(bench=str(bench), out=folder / "out", device="cpu")) == EXIT_OK
    return folder / "out"


@pytest.fixture
def copy(measured: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(measured, tmp_path / "out"))


def invoke(*argv: str) -> tuple[int, str]:
    result = runner.invoke(cli.app, list(argv))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr


# --- the journal ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"index": 1, "id": "default/work', "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "not a journal entry (a JSON object is expected)"),
        (b'{"schema_version": 1, "index": 1}', "id: Field required"),
    ],
)
def test_a_damaged_entry_reads_as_damaged(copy: Path, content: bytes, why: str) -> None:
    path = journal_path(copy / "journal", 1, 1)
    path.write_bytes(content)
    assert load_entry(copy / "journal", 1, 1) == Damaged(path, why)
    assert read_entry(copy / "journal", 1, 1) is None


def test_an_entry_of_another_cell_is_damaged(copy: Path) -> None:
    journal = copy / "journal"
    shutil.copy(journal_path(journal, 1, 0), journal_path(journal, 1, 1))
    assert load_entry(journal, 1, 1) == Damaged(journal_path(journal, 1, 1), "it holds cell 0")


@pytest.mark.slow
def test_resume_measures_a_damaged_entry_again_with_a_warning(copy: Path) -> None:
    path = journal_path(copy / "journal", 2, 1)
    cut = path.read_bytes()[:40]
    path.write_bytes(cut)
    untouched = journal_path(copy / "journal", 2, 0).read_bytes()
    code, error = invoke("run", "--resume", str(copy))
    assert code == EXIT_OK
    assert error.splitlines() == [
        f"warning: {path}: damaged journal entry (not valid JSON); measuring it again"
    ]
    assert path.with_name(path.name + ".damaged").read_bytes() == cut
    entry = read_entry(copy / "journal", 2, 1)
    assert entry is not None and entry.result.status == "ok"
    assert journal_path(copy / "journal", 2, 0).read_bytes() == untouched
    cells = results_io.load(copy / "results.json").cells
    assert [c.status for c in cells] == ["ok"] * 3
    assert [r.round for r in cells[1].rounds] == [1, 2]


def test_collect_counts_a_damaged_entry_as_a_failed_round(copy: Path) -> None:
    journal_path(copy / "journal", 1, 2).write_text("{")
    code, error = invoke("collect", str(copy))
    assert code == EXIT_FAILED
    cell = results_io.load(copy / "results.json").cells[2]
    assert cell.status == "failed"
    assert cell.reason == (
        "round 1: damaged journal entry (not valid JSON); `kernbench run --resume` measures "
        "it again"
    )


def test_a_damaged_cell_in_flight_names_no_cell(copy: Path) -> None:
    path = current_path(copy / "journal", 1)
    for content in (b"", b"{", b"\xff", b'{"index": "x"}', b"[]"):
        path.write_bytes(content)
        assert read_current(copy / "journal", 1) is None


def test_a_newer_entry_is_refused_not_overwritten(copy: Path) -> None:
    path = journal_path(copy / "journal", 1, 0)
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 9}))
    code, error = invoke("run", "--resume", str(copy))
    assert code == EXIT_USAGE
    assert error == (f"{path}: schema_version: 9 is newer than this kernbench understands "
                     "(1); upgrade kernbench\n")


# --- run.json ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"bench_path": "/x', "{path}:1: not valid JSON: Unterminated string starting at"),
        (b"\xff", "{path}: not a readable run.json: 'utf-8' codec can't decode byte 0xff in "
                  "position 0: invalid start byte"),
        (b"[]", "{path}: not a run.json (a JSON object is expected)"),
        (b"[" * 100_000, "{path}: not a readable run.json: maximum recursion depth exceeded "
                         "while decoding a JSON array from a unicode string"),
        (b'{"rounds": ' + b"9" * 5000 + b"}",
         "{path}: not a readable run.json: Exceeds the limit (4300 digits) for integer "
         "string conversion: value has 5000 digits"),
    ],
)
def test_a_damaged_run_json_is_one_line(copy: Path, content: bytes, message: str) -> None:
    (copy / "run.json").write_bytes(content)
    code, error = invoke("run", "--resume", str(copy))
    assert code == EXIT_USAGE
    assert error == message.format(path=copy / "run.json") + "\n"



def test_a_run_json_choosing_no_cell_names_run_json_not_the_benchs_exclude(copy: Path) -> None:
    options = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**options, "cells": []}))
    code, error = invoke("run", "--resume", str(copy))
    assert (code, error) == (EXIT_USAGE, f"{copy / 'run.json'}: cells: an empty list chooses "
                                         "no cell; leave it null for every cell\n")

# --- results files: render, merge, fast mode -------------------------------------------


def results_file(folder: Path, name: str, content: bytes) -> Path:
    path = folder / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bin.json", b"\xff\xfe\x00", "{path}: not a readable results file: 'utf-8' codec can't "
                                     "decode byte 0xff in position 0: invalid start byte"),
        ("big.json", b"1" * 5000, "{path}: not a readable results file: Exceeds the limit "
                                  "(4300 digits) for integer string conversion: value has "
                                  "5000 digits"),
        ("plain.json.gz", b'{"a": 1}', "{path}: not a readable results file: Not a gzipped "
                                       "file (b'{\"')"),
        ("cut.json.gz", gzip.compress(json.dumps(list(range(3000))).encode())[:2000],
         "{path}: not a readable results file: Compressed file ended before the "
         "end-of-stream marker was reached"),
    ],
)
def test_render_of_an_unreadable_file_is_one_line(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    path = results_file(tmp_path, name, content)
    assert invoke("render", str(path)) == (EXIT_USAGE, message.replace("{path}", str(path)) + "\n")


def test_render_of_a_folder_is_one_line(tmp_path: Path) -> None:
    assert invoke("render", str(tmp_path)) == (
        EXIT_USAGE, f"{tmp_path}: is a folder, not a results file\n"
    )


def test_merge_into_a_folder_is_one_line(measured: Path, tmp_path: Path) -> None:
    parts = [str(measured / "results.json")] * 2
    code, error = invoke("merge", *parts, "--out", str(tmp_path))
    assert (code, error) == (EXIT_USAGE, f"--out: {tmp_path} is a folder; give the merged "
                                         "file's path\n")


def test_fast_mode_with_data_naming_a_folder_is_one_line(tmp_path: Path) -> None:
    bench = sleep_bench(tmp_path / "b", "data: shelf\n")
    (tmp_path / "b" / "shelf").mkdir()
    code, error = invoke("run", "--bench", str(bench), "--fast", "--out", str(tmp_path / "o"))
    assert (code, error) == (EXIT_USAGE, f"{bench}:7: data: {tmp_path / 'b' / 'shelf'} is not a "
                                         "results file\n")


REPO = Path(__file__).resolve().parent.parent


def undrawable(tmp_path: Path) -> Path:
    """The committed collective sweep with a world size no figure can show."""
    data = json.loads((REPO / "benches" / "data" / "milestone-1h-ccl.json").read_text())
    data["cells"][0]["params"]["world_size"] = "x"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data))
    return path


def test_render_of_results_no_figure_can_show_is_one_line(tmp_path: Path) -> None:
    path = undrawable(tmp_path)
    code, error = invoke("render", str(path), "--out", str(tmp_path / "figures"))
    assert code == EXIT_USAGE
    assert error.startswith("figure busbw: cannot be drawn from these results: ValueError: ")
    assert error.count("\n") == 1


def test_figures_drawn_in_forked_children_fail_in_one_line_too(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    results = results_io.load(undrawable(tmp_path))
    with pytest.raises(UserError, match=r"^figure busbw: cannot be drawn from these results"):
        render_results(results, tmp_path / "figures", parallel=True)
    assert "Traceback" not in capfd.readouterr().err


def test_a_results_file_of_an_unknown_device_is_one_line(tmp_path: Path) -> None:
    fixture = Path(__file__).parent / "fixtures" / "milestone-1h-ccl-v1.json.gz"
    data = json.loads(gzip.decompress(fixture.read_bytes()))
    data["device"] = "tpu"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"results.json: device: Input should be 'cpu' or 'cuda'"):
        results_io.load(path)
