"""The one policy for every file kernbench writes, and the committed H200 files through it.

Newer versions are refused with one line, older ones migrated step by step (a file
without `schema_version` is version 0), and whatever is wrong comes back as one line
naming the file: a UserError, exit code 2.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from kernbench.ab.outcomes import load_outcome
from kernbench.ab.schedule import load_manifest
from kernbench.analyze.collective import fit_alpha_beta, series_key, series_name
from kernbench.errors import EXIT_USAGE, UserError
from kernbench.execute.pins import load_pins, save_pins
from kernbench.results import model as results_io
from kernbench.results.ab import AB_FORMAT, AB_VERSION
from kernbench.results.jsonio import (
    FileFormat,
    plain_or_packed,
    read_json,
    write_json,
    write_packed_json,
)

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "benches/data"
AB_FOLDER = DATA / "ab-tf32-h200"
# The first committed A/B (2026-11-29): its sides' results are schema 1, from before `duty`.
FIRST_AB_FOLDER = DATA / "ab-schedules-h200" / "tf32-sequential-run1"


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 2
    x: float
    y: float


def _rename_value_to_x(data: dict[str, Any]) -> dict[str, Any]:
    data["x"] = data.pop("value")
    return data


def _add_y(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "y": 2 * data["x"]}


POINT = FileFormat("point file", 2, Point, {1: _rename_value_to_x, 2: _add_y})


def _one_line_error(excinfo: pytest.ExceptionInfo[UserError]) -> str:
    message = str(excinfo.value)
    assert excinfo.value.code == EXIT_USAGE and "\n" not in message
    return message


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


# ---- the policy ------------------------------------------------------------------------


def test_the_current_version_is_read_as_it_is(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", {"schema_version": 2, "x": 1.0, "y": 5.0})
    assert POINT.read(path) == Point(x=1.0, y=5.0)


def test_an_older_version_is_migrated_step_by_step(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", {"schema_version": 1, "x": 1.5})
    assert POINT.read(path) == Point(x=1.5, y=3.0)


def test_a_file_without_a_version_is_version_0(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", {"value": 4.0})
    assert POINT.read(path) == Point(x=4.0, y=8.0)


def test_a_newer_version_is_refused_with_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", {"schema_version": 3, "x": 1.0, "y": 2.0})
    with pytest.raises(UserError) as excinfo:
        POINT.read(path)
    assert _one_line_error(excinfo) == (
        f"{path}: schema_version: 3 is newer than this kernbench understands (2); "
        "upgrade kernbench"
    )


def test_a_version_without_a_migration_is_refused(tmp_path: Path) -> None:
    no_steps = FileFormat("point file", 2, Point)
    path = _write(tmp_path / "p.json", {"schema_version": 1, "x": 1.0})
    with pytest.raises(UserError) as excinfo:
        no_steps.read(path)
    assert "schema_version: 1 cannot be migrated; not a point file" in _one_line_error(excinfo)


@pytest.mark.parametrize("version", ["2", 2.0, True, None])
def test_a_version_that_is_not_an_integer_is_refused(tmp_path: Path, version: Any) -> None:
    path = _write(tmp_path / "p.json", {"schema_version": version, "x": 1.0, "y": 2.0})
    with pytest.raises(UserError) as excinfo:
        POINT.read(path)
    assert "schema_version:" in _one_line_error(excinfo) and "not an integer" in str(excinfo.value)


def test_a_field_that_does_not_validate_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", {"schema_version": 2, "x": "wide", "y": 2.0})
    with pytest.raises(UserError) as excinfo:
        POINT.read(path)
    assert _one_line_error(excinfo).startswith(f"{path}: x: Input should be a valid number")


def test_bad_json_gives_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{\n "schema_version": 2,\n "x": 1.0,,\n}')
    with pytest.raises(UserError) as excinfo:
        POINT.read(path)
    assert _one_line_error(excinfo).startswith(f"{path}:3: not valid JSON:")


def test_json_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", [1, 2, 3])
    with pytest.raises(UserError) as excinfo:
        POINT.read(path)
    assert _one_line_error(excinfo) == f"{path}: not a point file (a JSON object is expected)"


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError) as excinfo:
        POINT.read(tmp_path / "gone.json")
    assert _one_line_error(excinfo) == f"{tmp_path / 'gone.json'}: point file not found"


def test_a_plain_file_named_gz_gives_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "plain.json.gz", {"schema_version": 2})
    with pytest.raises(UserError) as excinfo:
        POINT.read(path)
    assert "not a readable point file" in _one_line_error(excinfo)


@pytest.mark.parametrize("suffix", [".xz", ".gz"])
def test_a_packed_file_reads_back_and_a_cut_one_gives_one_line(
    tmp_path: Path, suffix: str
) -> None:
    data = {"schema_version": 2, "x": 1.0, "y": 2.0, "pad": list(range(999))}
    whole = tmp_path / f"whole.json{suffix}"
    write_packed_json(whole, data)
    assert read_json(whole) == data
    assert plain_or_packed(tmp_path / "whole.json") == whole
    assert plain_or_packed(tmp_path / "other.json") is None
    cut = tmp_path / f"cut.json{suffix}"
    cut.write_bytes(whole.read_bytes()[:-40])
    with pytest.raises(UserError) as excinfo:
        read_json(cut, "results file")
    assert _one_line_error(excinfo).startswith(f"{cut}: not a readable results file:")


@pytest.mark.parametrize("suffix", [".xz", ".gz"])
def test_a_packed_file_cut_by_a_full_disk_leaves_the_old_one_whole(
    tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    packed = tmp_path / f"p.json{suffix}"
    write_packed_json(packed, {"old": 1})
    before = packed.read_bytes()

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gzip.GzipFile, "write", full_disk)
    monkeypatch.setattr("lzma.LZMAFile.write", full_disk)
    with pytest.raises(UserError, match="cannot write: No space left on device"):
        write_packed_json(packed, {"new": 2})
    assert packed.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [packed.name]


def test_a_packed_file_needs_a_packed_suffix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a packed file ends in .xz or .gz"):
        write_packed_json(tmp_path / "p.json", {})


def test_writing_is_sorted_and_packing_is_deterministic(tmp_path: Path) -> None:
    POINT.write(tmp_path / "p.json", Point(y=2.0, x=1.0))
    text = (tmp_path / "p.json").read_text()
    assert text.index('"schema_version"') < text.index('"x"') < text.index('"y"')
    assert list(tmp_path.iterdir()) == [tmp_path / "p.json"]  # no temp file left behind
    write_json(tmp_path / "a.json", {"b": 1})
    for name in ("one.json.gz", "two.json.gz", "one.json.xz", "two.json.xz"):
        write_packed_json(tmp_path / name, {"b": 1, "a": [1.5]})
    assert (tmp_path / "one.json.gz").read_bytes() == (tmp_path / "two.json.gz").read_bytes()
    assert (tmp_path / "one.json.xz").read_bytes() == (tmp_path / "two.json.xz").read_bytes()
    assert json.loads(gzip.decompress((tmp_path / "one.json.gz").read_bytes())) == {
        "a": [1.5], "b": 1
    }


# ---- every kind of file through it -----------------------------------------------------


def test_a_newer_results_file_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "results.json", {"schema_version": results_io.SCHEMA_VERSION + 1})
    with pytest.raises(UserError) as excinfo:
        results_io.load(path)
    assert "is newer than this kernbench understands" in _one_line_error(excinfo)


def test_a_newer_ab_report_and_manifest_are_refused(tmp_path: Path) -> None:
    for name in ("ab.json", "ab-run.json"):
        data = json.loads((AB_FOLDER / name).read_text())
        _write(tmp_path / name, {**data, "schema_version": AB_VERSION + 1})
    for load in (lambda folder: AB_FORMAT.read(folder / "ab.json"), load_manifest):
        with pytest.raises(UserError) as excinfo:
            load(tmp_path)
        assert "is newer than this kernbench understands" in _one_line_error(excinfo)


def test_pins_files_go_through_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    save_pins(path, {"k": {"fingerprint": {}, "winner": {"BLOCK": 64}}})
    assert load_pins(path) == {"k": {"fingerprint": {}, "winner": {"BLOCK": 64}}}
    for data, expected in [
        ({"schema_version": 9, "pins": {}}, "schema_version: 9 is newer"),
        ({"pins": {}}, "schema_version: 0 cannot be migrated; not a pins file"),
        ({"schema_version": 1, "pins": []}, "pins: Input should be a valid dictionary"),
    ]:
        _write(path, data)
        with pytest.raises(UserError) as excinfo:
            load_pins(path)
        assert expected in _one_line_error(excinfo)


# ---- the committed H200 files ----------------------------------------------------------


def test_the_committed_gemm_sweep_migrates() -> None:
    gemm = results_io.load(DATA / "milestone-1h-gemm.json.xz")
    assert gemm.schema_version == results_io.SCHEMA_VERSION
    assert gemm.provenance["device_name"] == "NVIDIA H200" and gemm.fits == {}


def _fits_as_render_made_them(results: results_io.Results) -> dict[str, Any]:
    """What render/ccl.py fitted at draw time before the fits were stored."""
    plotted = [c for c in results.cells if c.status == "ok" and c.summary and "op" in c.params]
    fits = {}
    for key in dict.fromkeys(series_key(cell.params) for cell in plotted):
        cells = sorted(
            (c for c in plotted if series_key(c.params) == key),
            key=lambda cell: float(cell.params["bytes"]),
        )
        sizes = [float(cell.params["bytes"]) for cell in cells]
        medians = [cell.summary.median_s for cell in cells if cell.summary]
        if len(set(sizes)) >= 2:
            fits[series_name(key)] = fit_alpha_beta(sizes, medians)
    return fits


def test_the_committed_collective_sweep_migrates_with_the_fits_render_made(
    tmp_path: Path,
) -> None:
    # The 2026-11-29 2xH200 sweep, as committed then (format version 1).
    old = REPO / "tests/fixtures/milestone-1h-ccl-v1.json.gz"
    assert json.loads(gzip.decompress(old.read_bytes()))["schema_version"] == 1
    ccl = results_io.load(old)
    assert ccl.schema_version == results_io.SCHEMA_VERSION
    expected = _fits_as_render_made_them(ccl)
    assert len(expected) == 10 and "allreduce n=2 bf16 in-place" in expected
    assert {name: fit.alpha_beta() for name, fit in ccl.fits.items()} == expected
    # Written and read back as version 2, the fits are the same floats.
    results_io.save(ccl, tmp_path / "results.json")
    assert results_io.load(tmp_path / "results.json") == ccl


def test_a_fit_without_slope_survives_the_round_trip(tmp_path: Path) -> None:
    ccl = results_io.load(DATA / "milestone-1h-ccl.json")
    flat = results_io.Fit(alpha_s=1e-5, beta_bytes_per_s=math.inf, r2=math.nan)
    results_io.save(ccl.model_copy(update={"fits": {"flat": flat}}), tmp_path / "r.json")
    back = results_io.load(tmp_path / "r.json").fits["flat"]
    assert back.alpha_s == 1e-5 and math.isinf(back.beta_bytes_per_s) and math.isnan(back.r2)


@pytest.mark.parametrize("folder", [AB_FOLDER, FIRST_AB_FOLDER], ids=["today", "first"])
def test_the_committed_ab_folders_load(folder: Path) -> None:
    report = AB_FORMAT.read(folder / "ab.json")
    manifest = load_manifest(folder)
    assert report.schema_version == AB_VERSION and manifest.rounds == report.rounds == 6
    assert load_pins(folder / "pins.json") == {}
    for run in manifest.runs:
        outcome = load_outcome(folder / run.name)
        assert outcome.results is not None, outcome.problem
        assert outcome.results.schema_version == results_io.SCHEMA_VERSION
        assert outcome.results.fits == {}
