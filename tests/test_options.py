"""Run options declared once: run.json is the model, to_argv() is its command line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from kernbench import cli
from kernbench.commands import run as run_command
from kernbench.errors import EXIT_OK, UserError
from kernbench.execute.options import RUN_JSON_VERSION, RunOptions, load_options, save_options
from kernbench.execute.pins import bench_source_hash, save_pins
from kernbench.execute.run_folder import RunFolder
from kernbench.results.kinds import RUN_JSON_NAME
from kernbench.spec.loader import load_bench
from kernbench.spec.models import spec_hash


def tiny_bench(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "tiny.yaml"
    bench.write_text(textwrap.dedent("""\
        name: tiny
        description: tiny
        kernel: sleep
        axes: {us: [1, 2, 3, 4]}
        rounds: 3
        """))
    return bench


def options_for(bench: Path, **changes: object) -> RunOptions:
    """What `kernbench run --bench BENCH --device cpu` starts with, changed by `changes`."""
    defaults: dict[str, object] = {
        "bench_path": bench.resolve(),
        "spec_hash": spec_hash(load_bench(bench)),
        "spec": load_bench(bench).model_dump(mode="json"),
        "device": "cpu",
        "rounds": 3,
        "project_pins": bench.resolve().parent / "pins" / "tiny.json",
        "kernel_source": bench_source_hash(load_bench(bench), bench.resolve().parent),
    }
    return RunOptions.model_validate({**defaults, **changes})


def parsed_by_cli(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, side: str = ""
) -> RunFolder:
    """The run `kernbench run ARGV` would measure, caught before any worker starts."""
    started: list[RunFolder] = []

    def measure(run: RunFolder) -> int:
        started.append(run)
        return EXIT_OK

    monkeypatch.setattr(run_command, "measure", measure)
    monkeypatch.delenv("MILESTONE_FAST", raising=False)
    monkeypatch.setenv("KERNBENCH_SIDE", side)
    result = CliRunner().invoke(cli.app, ["run", *argv])
    assert result.exit_code == EXIT_OK, result.output
    (run,) = started
    return run


def same_options(a: RunOptions, b: RunOptions) -> bool:
    # created_utc is when a run starts, not an option of its command line.
    return a.model_dump(exclude={"created_utc"}) == b.model_dump(exclude={"created_utc"})


def test_the_defaults_round_trip_through_the_cli(tmp_path, monkeypatch):
    bench = tiny_bench(tmp_path / "b")
    options = options_for(bench)
    run = parsed_by_cli(options.to_argv(tmp_path / "out"), monkeypatch)
    assert same_options(run.options, options)
    assert run.path == tmp_path / "out" and run.bench.name == "tiny"


@pytest.mark.parametrize(
    "changes",
    [
        {"rounds": 1, "first_round": 4, "side": "B", "figures": False},
        {"only": ("us=1,2",), "shard": "2/2", "pins_mode": "record"},
        {"only": ("us=3", "variant=default"), "pins_mode": "replay"},
    ],
)
def test_every_option_round_trips_through_the_cli(tmp_path, monkeypatch, changes):
    bench = tiny_bench(tmp_path / "b")
    options = options_for(bench, **changes)
    run = parsed_by_cli(options.to_argv(tmp_path / "out"), monkeypatch, side=options.side)
    assert same_options(run.options, options)


@pytest.mark.parametrize("mode", ["replay", "record", "auto"])
def test_a_pins_file_round_trips_through_the_cli(tmp_path, monkeypatch, mode):
    bench = tiny_bench(tmp_path / "b")
    pins = tmp_path / "pins.json"
    save_pins(pins, {})  # a run checks the file before it measures
    options = options_for(bench, pins=pins, project_pins=None, pins_mode=mode)
    run = parsed_by_cli(options.to_argv(tmp_path / "out"), monkeypatch)
    assert same_options(run.options, options)


def test_options_are_frozen_and_forbid_unknown_fields(tmp_path):
    options = options_for(tiny_bench(tmp_path / "b"))
    with pytest.raises(ValidationError, match="frozen"):
        options.rounds = 5  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Extra inputs"):
        options.replace(out_dir="x")
    assert options.replace(rounds=5).rounds == 5 and options.rounds == 3


def test_exactly_one_pins_source(tmp_path):
    bench = tiny_bench(tmp_path / "b")
    with pytest.raises(ValidationError, match="exactly one of pins and project_pins"):
        options_for(bench, project_pins=None)
    with pytest.raises(ValidationError, match="exactly one of pins and project_pins"):
        options_for(bench, pins=tmp_path / "p.json")


def test_rounds_range_counts_from_the_first_round(tmp_path):
    options = options_for(tiny_bench(tmp_path / "b"), rounds=2, first_round=5)
    assert list(options.rounds_range) == [5, 6]


def test_run_json_round_trips_with_its_version(tmp_path):
    options = options_for(tiny_bench(tmp_path / "b"), only=("us=1",), shard="1/2")
    save_options(tmp_path, options)
    data = json.loads((tmp_path / RUN_JSON_NAME).read_text())
    assert data["schema_version"] == RUN_JSON_VERSION == 1
    assert data["only"] == ["us=1"]
    assert load_options(tmp_path) == options


def unversioned_run_json(options: RunOptions) -> dict[str, object]:
    """run.json as kernbench wrote it before versions: no schema_version, no figures."""
    return {
        "bench_path": str(options.bench_path),
        "device": options.device,
        "rounds": options.rounds,
        "first_round": options.first_round,
        "pins": None,
        "pins_mode": options.pins_mode,
        "project_pins": str(options.project_pins),
        "side": options.side,
        "only": list(options.only),
        "shard": options.shard,
        "spec_hash": options.spec_hash,
        "created_utc": options.created_utc,
    }


def test_a_run_json_from_before_versions_migrates(tmp_path):
    options = options_for(tiny_bench(tmp_path / "b"), only=("us=2",))
    (tmp_path / RUN_JSON_NAME).write_text(json.dumps(unversioned_run_json(options)))
    loaded = load_options(tmp_path)
    assert loaded == options.model_copy(update={"spec": None, "kernel_source": None})  # not then
    assert loaded.schema_version == 1 and loaded.figures is True


def test_a_newer_run_json_is_refused(tmp_path):
    options = options_for(tiny_bench(tmp_path / "b"))
    save_options(tmp_path, options)
    path = tmp_path / RUN_JSON_NAME
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 2}))
    with pytest.raises(UserError, match="schema_version: 2 is newer than this kernbench"):
        load_options(tmp_path)


def test_a_broken_run_json_is_one_line(tmp_path):
    options = options_for(tiny_bench(tmp_path / "b"))
    data = {**options.model_dump(mode="json"), "rounds": 0}
    (tmp_path / RUN_JSON_NAME).write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"run.json: rounds: Input should be greater"):
        load_options(tmp_path)
