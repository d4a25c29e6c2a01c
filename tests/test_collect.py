"""Measured data is never lost: what fails after the cells are measured fails those cells
with the reason, results.json is still written, and `kernbench collect` (or `--resume`
after a bench fix that changes nothing measured) rebuilds it from the journal."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from kernbench.results import model as results_io

pytestmark = pytest.mark.slow
runner = CliRunner()

BENCH = """\
name: nap
description: a short spin
kernel: sleep
axes: {{work_us: [1, 2]}}
metrics: {{{metrics}}}
timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3}}
rounds: 2
{extra}"""
GOOD = "flops: 2*work_us, bytes: 8*work_us"


def write_bench(folder: Path, metrics: str = GOOD, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "nap.yaml"
    bench.write_text(BENCH.format(metrics=metrics, extra=extra))
    return bench


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("measured")
    bench = write_bench(folder / "b")
    assert run(RunRequest(bench=str(bench), out=folder / "out", device="cpu")) == EXIT_OK
    return folder


@pytest.fixture
def copy(measured: Path, tmp_path: Path) -> Path:
    """A copy of the measured run, its run.json naming the copy's bench."""
    shutil.copytree(measured / "b", tmp_path / "b")
    out = Path(shutil.copytree(measured / "out", tmp_path / "out"))
    run_json = out / "run.json"
    run_json.write_text(run_json.read_text().replace(str(measured), str(tmp_path)))
    return out


def invoke(*argv: str) -> tuple[int, str]:
    result = runner.invoke(cli.app, list(argv))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr


def samples(out: Path) -> list[list[float]]:
    return [r.samples_s for c in results_io.load(out / "results.json").cells for r in c.rounds]


def test_a_metric_that_raises_fails_the_cells_and_keeps_their_samples(copy: Path) -> None:
    measured = samples(copy)
    (copy / "results.json").unlink()
    write_bench(copy.parent / "b", metrics="flops: min(work_us), bytes: 8*work_us")
    code, error = invoke("collect", str(copy))
    assert code == EXIT_FAILED
    results = results_io.load(copy / "results.json")
    for cell in results.cells:
        assert cell.status == "failed"
        assert (cell.reason or "").startswith("measured, but metric flops: ")
        assert cell.summary is not None and "gbs" in cell.metrics and "tflops" not in cell.metrics
    assert samples(copy) == measured
    assert f"fix the bench, then `kernbench collect {copy}` rebuilds the results" in error
    # The bench fixed, collect rebuilds the same samples into ok cells.
    write_bench(copy.parent / "b")
    assert invoke("collect", str(copy))[0] == EXIT_OK
    results = results_io.load(copy / "results.json")
    assert [c.status for c in results.cells] == ["ok", "ok"] and results.complete
    assert samples(copy) == measured


def test_a_missing_hardware_profile_fails_the_cells_and_keeps_them(copy: Path) -> None:
    write_bench(copy.parent / "b", extra="hardware: no-such-profile\n")
    code, _ = invoke("collect", str(copy))
    assert code == EXIT_FAILED
    for cell in results_io.load(copy / "results.json").cells:
        assert cell.status == "failed" and cell.summary is not None
        assert (cell.reason or "").startswith(
            "measured, but hardware: unknown hardware profile 'no-such-profile'; known: "
        )


def test_a_tile_that_is_not_integers_fails_its_cells_and_results_are_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "tiled.py").write_text(textwrap.dedent("""\
        from kernbench.kernels.base import Kernel

        def make(n, **_):
            return Kernel(run=lambda: sum(range(n)), tile=("big", "small"))
        """))
    bench = tmp_path / "tiled.yaml"
    bench.write_text(textwrap.dedent("""\
        name: tiled
        description: a kernel whose tile is words
        kernel: tiled:make
        axes: {n: [8]}
        timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}
        """))
    code = run(RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu"))
    assert code == EXIT_FAILED
    (cell,) = results_io.load(tmp_path / "out" / "results.json").cells
    assert cell.status == "failed" and cell.summary is not None
    assert cell.reason == "measured, but tile: ['big', 'small'] is not a list of integers"


def test_resume_after_a_metrics_fix_rebuilds_with_a_note(copy: Path) -> None:
    (copy / "results.json").unlink()
    write_bench(copy.parent / "b", metrics="flops: 4*work_us")
    code, error = invoke("run", "--resume", str(copy))
    assert code == EXIT_OK
    assert error == (
        f"note: {copy.parent / 'b' / 'nap.yaml'} changed since the run started, only in what "
        "is computed from the measurements; its results are rebuilt with the bench as it is "
        "now\n"
    )
    cells = results_io.load(copy / "results.json").cells
    assert [c.metrics["flops"] for c in cells] == [4.0, 8.0]


def test_resume_and_collect_refuse_a_bench_that_measures_differently(copy: Path) -> None:
    bench = copy.parent / "b" / "nap.yaml"
    bench.write_text(bench.read_text().replace("[1, 2]", "[1, 3]"))
    for command in (["run", "--resume"], ["collect"]):
        code, error = invoke(*command, str(copy))
        assert code == EXIT_USAGE
        assert error == (f"{command[-1]}: {bench} changed since the run started (axes); start "
                         "a new run\n")


def test_resume_refuses_the_options_of_a_new_run(copy: Path) -> None:
    code, error = invoke("run", "--resume", str(copy), "--rounds", "5", "--device", "cuda",
                         "--only", "work_us=1", "--bench-dir", str(copy))
    assert code == EXIT_USAGE
    assert error == ("--resume: the run goes on with its own settings (run.json); drop "
                     "--bench-dir, --device, --rounds, --only\n")


def test_a_resumed_run_keeps_the_command_that_started_it(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = json.loads((copy / "provenance.json").read_text())["command"]
    (copy / "journal" / "r2" / "00001.json").unlink()
    for attempt in (1, 2):
        monkeypatch.setattr(sys, "argv", ["kernbench", "run", "--resume", f"try{attempt}"])
        (copy / "journal" / "r2" / "00001.json").unlink(missing_ok=True)
        assert invoke("run", "--resume", str(copy))[0] == EXIT_OK
    recorded = results_io.load(copy / "results.json").provenance
    assert recorded["command"] == started
    assert recorded["resumed_by"] == [["kernbench", "run", "--resume", f"try{n}"] for n in (1, 2)]


def test_collect_of_a_run_cut_short_says_what_is_left(copy: Path) -> None:
    (copy / "journal" / "r2" / "00001.json").unlink()
    code, error = invoke("collect", str(copy))
    assert code == EXIT_FAILED
    assert f"1 cell round not measured yet; measure them with: kernbench run --resume {copy}" \
        in error
    results = results_io.load(copy / "results.json")
    assert not results.complete and [c.status for c in results.cells] == ["ok", "pending"]


def test_collect_needs_a_run_folder(tmp_path: Path) -> None:
    assert invoke("collect", str(tmp_path)) == (
        EXIT_USAGE, f"collect: {tmp_path} holds no run (run.json not found)\n"
    )


@pytest.mark.slow
def test_a_run_recorded_before_new_timer_fields_is_collected_without_a_change(
    tmp_path: Path,
) -> None:
    from cli_helpers import invoke, nap_bench

    bench = nap_bench(tmp_path / "b")
    out = tmp_path / "out"
    assert invoke("run", "--bench", str(bench), "--device", "cpu", "--rounds", "1",
                  "--no-figures", "--out", str(out))[0] == 0
    run_json = out / "run.json"
    recorded = json.loads(run_json.read_text())
    for field in ("turns", "min_time_s", "steady_tol"):  # as a kernbench before them wrote
        del recorded["spec"]["timer"][field]
    recorded["spec_hash"] = "0" * 16
    run_json.write_text(json.dumps(recorded))
    code, _, err = invoke("collect", str(out))
    assert code == 0 and "changed" not in err
    recorded["spec"]["timer"]["budget_s"] = 9.0  # a real change is still refused
    run_json.write_text(json.dumps(recorded))
    code, _, err = invoke("collect", str(out))
    assert code == 2 and "changed since the run started (timer)" in err


def test_the_measuring_device_is_read_from_the_saved_provenance_without_task_files(
    copy: Path,
) -> None:
    from kernbench.execute.finish import measured_on
    from kernbench.execute.options import load_options
    from kernbench.execute.run_folder import RunFolder
    from kernbench.results import provenance
    from kernbench.spec.loader import load_bench

    options = load_options(copy)
    folder = RunFolder(options, load_bench(options.bench_path), copy)
    assert measured_on(folder) == provenance.device_model("cpu")  # the task files say
    shutil.rmtree(copy / "tasks")  # as a folder copied off the measuring machine
    saved = json.loads((copy / "provenance.json").read_text())
    (copy / "provenance.json").write_text(json.dumps({**saved, "device_name": "NVIDIA H200"}))
    assert measured_on(folder) == "NVIDIA H200"
    (copy / "provenance.json").unlink()
    assert measured_on(folder) is None


def test_collect_without_results_keeps_the_measuring_machines_provenance(copy: Path) -> None:
    saved = json.loads((copy / "provenance.json").read_text())  # written as the run began
    assert saved["host"] and saved["device"] == "cpu"
    saved["host"] = "the-measuring-host"
    (copy / "provenance.json").write_text(json.dumps(saved))
    (copy / "results.json").unlink()  # as when the run's parent was killed
    code, _ = invoke("collect", str(copy))
    assert code == EXIT_OK
    assert results_io.load(copy / "results.json").provenance["host"] == "the-measuring-host"
