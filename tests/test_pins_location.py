"""Where a run's pins go: its own folder always, the bench's pins file only with
--save-pins; the committed pins are replayed either way."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.commands import run as run_command
from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute.journal import TASK
from kernbench.execute.options import RunOptions
from kernbench.execute.run_folder import RunFolder
from kernbench.execute.worker_task import write_task
from kernbench.results import model as results_io
from kernbench.spec.loader import load_bench
from kernbench.spec.models import spec_hash

TUNED = '''
import numpy as np
from kernbench.kernels.base import Kernel

def make(n, device="cpu", **_):
    a = np.ones((n, n))
    return Kernel(run=lambda: a @ a, configs=[{"k": 1}, {"k": 2}],
                  build=lambda cfg: (lambda: a @ a))
'''


def tuned_bench(folder: Path, rounds: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tuned.py").write_text(TUNED)
    bench = folder / "tuned.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: tuned
        description: an autotuned kernel
        kernel: tuned:make
        axes:
          n: [8]
        timer: {{warmup_s: 0.0, budget_s: 0.02, min_samples: 3}}
        rounds: {rounds}
        """))
    return bench


def options_for(bench: Path, **changes: object) -> RunOptions:
    defaults: dict[str, object] = {
        "bench_path": bench.resolve(),
        "spec_hash": spec_hash(load_bench(bench)),
        "device": "cpu",
        "rounds": 1,
        "project_pins": bench.resolve().parent / "pins" / "tuned.json",
    }
    return RunOptions.model_validate({**defaults, **changes})


def task_pins(bench: Path, out: Path, **changes: object) -> tuple[list[str], list[str]]:
    options = options_for(bench, **changes)
    task = TASK.read(write_task(RunFolder(options, load_bench(bench), out), 1, [], "cpu"))
    return task.pins_read, task.pins_write


def test_a_run_reads_the_committed_pins_and_writes_only_its_own(tmp_path: Path) -> None:
    bench = tuned_bench(tmp_path / "b")
    project_pins = str((tmp_path / "b" / "pins" / "tuned.json").resolve())
    run_pins = str((tmp_path / "out" / "pins.json").resolve())
    assert task_pins(bench, tmp_path / "out") == ([project_pins, run_pins], [run_pins])
    saved = task_pins(bench, tmp_path / "out", save_pins=True)
    assert saved == ([project_pins, run_pins], [run_pins, project_pins])


def test_pins_named_on_the_command_line_are_written_unless_replayed(tmp_path: Path) -> None:
    bench = tuned_bench(tmp_path / "b")
    named = tmp_path / "p.json"
    run_pins = str((tmp_path / "out" / "pins.json").resolve())
    for mode, written in (("record", True), ("auto", True), ("replay", False)):
        read, write = task_pins(bench, tmp_path / "out", pins=named, project_pins=None,
                                pins_mode=mode)
        assert read == [str(named.resolve())]
        assert write == [run_pins] + ([str(named.resolve())] if written else []), mode


def test_save_pins_needs_the_bench_pins_file(tmp_path: Path) -> None:
    bench = tuned_bench(tmp_path / "b")
    with pytest.raises(ValueError, match="save_pins writes project_pins"):
        options_for(bench, pins=tmp_path / "p.json", project_pins=None, save_pins=True)
    pins = tmp_path / "p.json"
    pins.write_text('{"pins": {}}')
    result = CliRunner().invoke(cli.app, [
        "run", "--bench", str(bench), "--device", "cpu", "--pins", str(pins), "--save-pins",
    ])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == (
        "--save-pins: writes the bench's own pins file; with --pins FILE, "
        "use --pins-mode record (or auto) to write FILE\n"
    )


@pytest.mark.parametrize("changes", [{"save_pins": True}, {"hardware": "cpu-generic"}])
def test_save_pins_and_hardware_round_trip_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changes: dict[str, object]
) -> None:
    options = options_for(tuned_bench(tmp_path / "b"), **changes)
    started: list[RunFolder] = []

    def measure(folder: RunFolder) -> int:
        started.append(folder)
        return EXIT_OK

    monkeypatch.setattr(run_command, "measure", measure)
    monkeypatch.delenv("MILESTONE_FAST", raising=False)
    monkeypatch.delenv("KERNBENCH_SIDE", raising=False)
    result = CliRunner().invoke(cli.app, ["run", *options.to_argv(tmp_path / "out")])
    assert result.exit_code == EXIT_OK, result.output
    (parsed,) = started
    ignored = {"created_utc", "spec", "kernel_source"}  # when it starts; the bench as loaded
    assert parsed.options.model_dump(exclude=ignored) == options.model_dump(exclude=ignored)


def test_a_run_json_without_the_new_fields_still_reads(tmp_path: Path) -> None:
    options = options_for(tuned_bench(tmp_path / "b"))
    data = options.model_dump(mode="json", exclude={"save_pins", "hardware"})
    loaded = RunOptions.model_validate(data)
    assert (loaded.save_pins, loaded.hardware) == (False, None)


@pytest.mark.slow
def test_the_bench_pins_file_changes_only_with_save_pins(tmp_path: Path) -> None:
    bench = tuned_bench(tmp_path / "b", rounds=2)
    project_pins = tmp_path / "b" / "pins" / "tuned.json"

    assert run(RunRequest(bench=str(bench), out=tmp_path / "r1", device="cpu")) == EXIT_OK
    assert not project_pins.exists()
    (kept,) = json.loads((tmp_path / "r1" / "pins.json").read_text())["pins"]
    first = results_io.load(tmp_path / "r1" / "results.json").cells[0]
    assert [r.pin_action for r in first.rounds] == ["recorded", "replayed"]

    assert run(RunRequest(bench=str(bench), out=tmp_path / "r2", device="cpu",
                          save_pins=True)) == EXIT_OK
    assert list(json.loads(project_pins.read_text())["pins"]) == [kept]
    committed = project_pins.read_bytes()

    # The committed pins are replayed from the first round on, and left as they were.
    assert run(RunRequest(bench=str(bench), out=tmp_path / "r3", device="cpu")) == EXIT_OK
    third = results_io.load(tmp_path / "r3" / "results.json").cells[0]
    assert [r.pin_action for r in third.rounds] == ["replayed", "replayed"]
    assert project_pins.read_bytes() == committed


@pytest.mark.parametrize(
    ("text", "why"),
    [('{"x": 1}', ": schema_version: 0 cannot be migrated; not a pins file this kernbench reads"),
     ("nope", ":1: not valid JSON: Expecting value")],
)
def test_a_bad_pins_file_stops_the_run_before_it_measures(
    tmp_path: Path, text: str, why: str
) -> None:
    bench = tuned_bench(tmp_path / "b")
    for given, pins in (("--pins", tmp_path / "given.json"),
                        ("the bench's pins", tmp_path / "b" / "pins" / "tuned.json")):
        pins.parent.mkdir(exist_ok=True)
        pins.write_text(text)
        request = RunRequest(bench=str(bench), out=tmp_path / "out", device="cpu",
                             pins=pins if given == "--pins" else None)
        with pytest.raises(UserError) as info:
            run(request)
        assert str(info.value) == f"{given}: {pins}{why}"
        assert not (tmp_path / "out").exists()
        pins.unlink()
