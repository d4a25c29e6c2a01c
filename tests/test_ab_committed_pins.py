"""An A/B starts from the bench's committed pins: both sides time the configurations the
bench's committed data was measured with, and round 1 tunes only what they lack."""

from __future__ import annotations

import json

import pytest
from test_ab_sides import FakeSides, write_bench
from test_pins_location import tuned_bench

from kernbench.ab.run import resume_ab, run_ab
from kernbench.ab.schedule import load_manifest
from kernbench.commands.run import RunRequest, run
from kernbench.execute.pins import load_pins
from kernbench.results import model as results_io


def test_the_ab_pins_file_begins_as_the_benchs_committed_one(tmp_path):
    bench = write_bench(tmp_path)
    committed = tmp_path / "pins" / "fake-ab.json"
    committed.parent.mkdir()
    pin = {"fingerprint": {"kernel": "sleep"}, "winner": {"k": 2}, "candidates": []}
    committed.write_text(json.dumps({"schema_version": 1, "pins": {"sleep|cpu|{}": pin}}))
    messages: list[str] = []
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=FakeSides(),
                     echo=messages.append, schedule="sequential", rounds=2)
    assert load_pins(outcome.folder / "pins.json") == {"sleep|cpu|{}": pin}
    assert load_manifest(outcome.folder).pins_from == str(committed.resolve())
    assert any(m.startswith(f"pins: starting from {committed.resolve()} (1 pin)")
               for m in messages)


def test_without_committed_pins_the_ab_starts_from_none(tmp_path):
    outcome = run_ab(str(write_bench(tmp_path)), out=tmp_path / "ab", device="cpu",
                     run_side=FakeSides(), echo=lambda _: None, schedule="sequential",
                     rounds=2)
    assert load_pins(outcome.folder / "pins.json") == {}
    assert load_manifest(outcome.folder).pins_from is None


@pytest.mark.slow
def test_round_one_replays_a_committed_pin_instead_of_tuning_again(tmp_path):
    bench = tuned_bench(tmp_path / "b")
    assert run(RunRequest(bench=str(bench), device="cpu", save_pins=True,
                          out=tmp_path / "run")) == 0
    committed = load_pins(tmp_path / "b" / "pins" / "tuned.json")
    assert len(committed) == 1
    (bench.parent / "tuned.yaml").write_text(
        bench.read_text() + "variants:\n  one: {}\nab: {switch: KB_NONE, rounds: 2}\n")
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu", echo=lambda _: None)
    for side in ("r1_A", "r1_B", "r2_A", "r2_B"):
        (cell,) = results_io.load(outcome.folder / side / "results.json").cells
        assert cell.rounds[0].pin_action == "replayed", side
    assert load_pins(outcome.folder / "pins.json") == committed


class Killed(BaseException):
    """A kill -9 of the A/B: nothing after it runs."""


def test_an_ab_killed_before_its_pins_began_resumes_from_the_committed_pins(
    tmp_path, monkeypatch
):
    bench = write_bench(tmp_path)
    committed = tmp_path / "pins" / "fake-ab.json"
    committed.parent.mkdir()
    pin = {"fingerprint": {"kernel": "sleep"}, "winner": {"k": 2}, "candidates": []}
    committed.write_text(json.dumps({"schema_version": 1, "pins": {"sleep|cpu|{}": pin}}))

    def killed(*_):
        raise Killed

    monkeypatch.setattr("kernbench.ab.run.start_pins", killed)
    with pytest.raises(Killed):  # its plan saved, its pins file not yet
        run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=FakeSides(),
               echo=lambda _: None, schedule="sequential", rounds=2)
    monkeypatch.undo()
    assert not (tmp_path / "ab" / "pins.json").exists()
    resume_ab(tmp_path / "ab", run_side=FakeSides(), echo=lambda _: None)
    assert load_pins(tmp_path / "ab" / "pins.json") == {"sleep|cpu|{}": pin}
