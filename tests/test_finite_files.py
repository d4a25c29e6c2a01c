"""The files kernbench writes and reads back (run.json, ab-run.json, the journal, an A/B
side's status) and the reference files it draws hold no inf or nan: a file that does, by a
hand or a disk, is refused in one line like any bad file (the cell in flight: it names no
cell). Results keep theirs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from ab_fixtures.build import manifest
from cli_helpers import invoke

from kernbench.ab.outcomes import STATUS_FORMAT, SideStatus
from kernbench.ab.schedule import save_manifest
from kernbench.errors import EXIT_USAGE, UserError
from kernbench.execute.journal import (
    CurrentCell,
    JournalEntry,
    current_path,
    read_current,
    read_entry,
    write_current,
    write_entry,
)
from kernbench.execute.options import RunOptions, save_options
from kernbench.execute.pins import bench_source_hash
from kernbench.results.kinds import AB_MANIFEST_NAME, RUN_JSON_NAME
from kernbench.results.model import Check, RoundResult
from kernbench.spec.loader import load_bench
from kernbench.spec.models import spec_hash


def edited(path: Path, change: dict[str, object]) -> None:
    """`path`'s JSON with `change` (a key path with dots: its value) as Python writes it:
    inf as Infinity, nan as NaN."""
    data = json.loads(path.read_text())
    for where, value in change.items():
        *parents, last = where.split(".")
        place = data
        for key in parents:
            place = place[int(key)] if isinstance(place, list) else place[key]
        if isinstance(place, list):
            place[int(last)] = value
        else:
            place[last] = value
    path.write_text(json.dumps(data))


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A run's folder before its first cell: run.json of a bench that is still there."""
    bench = tmp_path / "b" / "tiny.yaml"
    bench.parent.mkdir()
    bench.write_text(textwrap.dedent("""\
        name: tiny
        description: tiny
        kernel: sleep
        axes: {us: [1, 2]}
        timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}
        """))
    loaded = load_bench(bench)
    folder = tmp_path / "out"
    folder.mkdir()
    save_options(folder, RunOptions(
        bench_path=bench.resolve(), spec_hash=spec_hash(loaded),
        spec=loaded.model_dump(mode="json"), device="cpu", rounds=1,
        project_pins=bench.resolve().parent / "pins" / "tiny.json",
        kernel_source=bench_source_hash(loaded, bench.resolve().parent),
    ))
    return folder


@pytest.mark.parametrize(("where", "value"), [
    ("timer.budget_s", float("inf")),
    ("axes.us.1", float("nan")),
])
def test_run_json_whose_bench_holds_inf_or_nan_is_one_line(
    run_folder: Path, where: str, value: float
) -> None:
    path = run_folder / RUN_JSON_NAME
    edited(path, {f"spec.{where}": value})
    code, _, error = invoke("run", "--resume", str(run_folder))
    assert (code, error) == (EXIT_USAGE,
                             f"{path}: spec: {where}: Input should be a finite number\n")


@pytest.mark.parametrize(("field", "value"), [
    ("min_effect", float("inf")),
    ("turn_s", float("nan")),
])
def test_ab_run_json_with_inf_or_nan_is_one_line(
    tmp_path: Path, field: str, value: float
) -> None:
    save_manifest(tmp_path, manifest(rounds=2))
    path = tmp_path / AB_MANIFEST_NAME
    edited(path, {field: value})
    code, _, error = invoke("summarize", str(tmp_path))
    assert (code, error) == (EXIT_USAGE, f"{path}: {field}: Input should be a finite number\n")


@pytest.mark.parametrize("started", [float("nan"), float("inf")])
def test_a_cell_in_flight_started_at_no_finite_time_names_no_cell(
    tmp_path: Path, started: float
) -> None:
    # Started at nan or inf, the cell would never time out: the parent blames no cell.
    write_current(tmp_path, 1, CurrentCell(index=0, id="c", started=1.0))
    assert read_current(tmp_path, 1) == CurrentCell(index=0, id="c", started=1.0)
    edited(current_path(tmp_path, 1), {"started": started})
    assert read_current(tmp_path, 1) is None


def test_a_journal_entry_keeps_the_nan_of_a_check_its_kernel_failed(tmp_path: Path) -> None:
    # A kernel whose output is nan has a check error of nan: a result, not damage.
    result = RoundResult(round=1, status="failed", reason="check failed",
                         check=Check(rel_err=float("nan"), tolerance=0.01, ok=False))
    write_entry(tmp_path, 1, JournalEntry(index=0, id="c", result=result))
    entry = read_entry(tmp_path, 1, 0)
    assert entry is not None and entry.result.check is not None
    assert entry.result.check.rel_err != entry.result.check.rel_err  # nan


def test_a_side_status_with_an_infinite_wall_time_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    STATUS_FORMAT.write(path, SideStatus(returncode=0, wall_s=1.5))
    edited(path, {"wall_s": float("inf")})
    with pytest.raises(UserError) as refused:
        STATUS_FORMAT.read(path)
    assert str(refused.value) == f"{path}: wall_s: Input should be a finite number"


def test_a_reference_file_with_an_infinite_time_is_one_line(tmp_path: Path) -> None:
    # Let through, the inf reached a figure and failed there with a TypeError.
    path = tmp_path / "ref.json"
    path.write_text(json.dumps({"schema_version": 1, "source": "nccl-tests", "points": [
        {"op": "allreduce", "bytes": 1024, "inplace": True, "dtype": "bf16",
         "world_size": 2, "time_s": float("inf")}]}))
    committed = Path(__file__).resolve().parent.parent / "benches/data/milestone-1h-ccl.json"
    code, _, error = invoke("render", str(committed), "--out", str(tmp_path / "figures"),
                            "--reference", str(path))
    assert (code, error) == (EXIT_USAGE,
                             f"{path}: points.0.time_s: Input should be a finite number\n")
