"""A command's --out that cannot be written is one line and exit 2, before anything is
read or measured; a folder that does not exist yet is made (results/outpaths.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke, nap_bench
from fixtures_results import make_gemm_results

from kernbench.errors import EXIT_USAGE
from kernbench.results import model as results_io


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A small saved results file that asks for no figures (no matplotlib here)."""
    made = make_gemm_results(shapes=[(64, 64, 64)], dtypes=["bf16"], variants=["resident"])
    path = tmp_path / "run" / "results.json"
    results_io.save(made.model_copy(update={"spec": {**made.spec, "figures": []}}), path)
    return path


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "somefile"
    path.write_text("taken\n")
    return path


def test_report_makes_its_folder_and_refuses_a_file(results: Path, a_file: Path) -> None:
    new = results.parent.parent / "new" / "dir"
    code, out, err = invoke("report", str(results), "--out", str(new))
    assert code == 0, err
    assert (new / "report.md").is_file() and (new / "report.html").is_file()
    assert invoke("report", str(results), "--out", str(a_file)) == (
        EXIT_USAGE, "", f"--out: {a_file} is a file; give a folder\n")


def test_export_refuses_a_folder_and_makes_the_file_folder(results: Path, tmp_path: Path,
                                                           a_file: Path) -> None:
    assert invoke("export", str(results), "--out", str(tmp_path)) == (
        EXIT_USAGE, "", f"--out: {tmp_path} is a folder; give a file\n")
    new = tmp_path / "new" / "dir" / "x.csv"
    code, out, err = invoke("export", str(results), "--out", str(new))
    assert (code, out) == (0, f"wrote {new}\n"), err
    assert new.read_text().startswith("bench,")
    inside = a_file / "x.csv"
    assert invoke("export", str(results), "--out", str(inside)) == (
        EXIT_USAGE, "", f"--out: {inside}: {a_file} is a file, not a folder\n")


def test_compare_and_render_refuse_a_file_as_their_folder(results: Path, a_file: Path) -> None:
    assert invoke("compare", str(results), str(results), "--out", str(a_file)) == (
        EXIT_USAGE, "", f"--out: {a_file} is a file; give a folder\n")
    assert invoke("render", str(results), "--out", str(a_file)) == (
        EXIT_USAGE, "", f"--out: {a_file} is a file; give a folder\n")


def test_ab_refuses_a_file_as_its_folder(tmp_path: Path, a_file: Path) -> None:
    bench = nap_bench(tmp_path / "benches")
    assert invoke("ab", "--bench", str(bench), "--switch", "KB_NOPE", "--device", "cpu",
                  "--out", str(a_file)) == (
        EXIT_USAGE, "", f"--out: {a_file} is a file; give a folder\n")


def test_calibrate_checks_its_out_before_measuring(tmp_path: Path, a_file: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from kernbench.commands import calibrate as command

    def measured(*args: object, **kwargs: object) -> None:
        raise AssertionError("measured before the --out was checked")

    monkeypatch.setattr(command, "calibrate", measured)
    inside = a_file / "x.yaml"
    for out, error in ((tmp_path, f"{tmp_path} is a folder; give a file"),
                       (inside, f"{inside}: {a_file} is a file, not a folder")):
        assert invoke("calibrate", "--device", "cpu", "--out", str(out)) == (
            EXIT_USAGE, "", f"--out: {error}\n")


def test_render_of_a_run_folder_draws_into_its_figures(results: Path) -> None:
    code, out, err = invoke("render", str(results.parent))
    assert code == 0, err
    drawn = [Path(line) for line in out.splitlines()]
    assert drawn and all(path.parent == results.parent / "figures" for path in drawn)
    assert not (results.parent.parent / "figures").exists()
