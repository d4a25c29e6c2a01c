"""An A/B's numbers are declared once (spec/ab_model.py): the `ab:` block's schema, the
command line's help and checks, and the settings all state the same, read from there."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.outputs import summarize_ab
from kernbench.ab.settings import AB_CHOICES, AbChoices, parse_rounds, resolve_settings
from kernbench.analyze.stats import CONFIDENCE, median_interval
from kernbench.commands.compare import compare_runs
from kernbench.errors import UserError
from kernbench.spec.ab_model import (
    AB_SCHEDULES,
    AUTO_MAX_ROUNDS,
    DEFAULT_MIN_EFFECT,
    DEFAULT_ROUNDS,
    DEFAULT_SCHEDULE,
    DEFAULT_TURN_MS,
    FAIL_ONS,
    GATE_MIN_ROUNDS,
    MAX_ROUNDS,
    MAX_TURN_MS,
    MIN_EFFECT_MAX,
    MIN_ROUNDS,
    AbSpec,
)
from kernbench.spec.models import Bench

SCHEMA = Path(__file__).parents[1] / "schemas" / "bench.schema.json"


def help_text(*command: str) -> str:
    result = CliRunner().invoke(cli.app, [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stdout).split())


def bench(**block: object) -> Bench:
    return Bench.model_validate({"name": "x", "kernel": "sleep", "description": "x",
                                 "ab": {"switch": "KB_X", **block}})


def test_the_schema_states_the_declared_bounds_and_defaults() -> None:
    ab = json.loads(SCHEMA.read_text())["$defs"]["AbSpec"]["properties"]
    assert (ab["rounds"]["minimum"], ab["rounds"]["maximum"]) == (MIN_ROUNDS, MAX_ROUNDS)
    assert ab["rounds"]["default"] == DEFAULT_ROUNDS
    assert ab["min_effect"]["maximum"] == MIN_EFFECT_MAX
    assert ab["min_effect"]["default"] == DEFAULT_MIN_EFFECT
    assert ab["schedule"]["enum"] == list(AB_SCHEDULES)
    assert ab["schedule"]["default"] == DEFAULT_SCHEDULE
    assert f"default {DEFAULT_TURN_MS:g}" in ab["turn_ms"]["description"]


def test_ab_help_states_the_declared_numbers() -> None:
    text = help_text("ab")
    assert (f"Rounds, {MIN_ROUNDS} to {MAX_ROUNDS} (default {DEFAULT_ROUNDS}); auto[:MAX]: "
            f"{DEFAULT_ROUNDS}, then one more at a time while a cell is unstable, up to MAX "
            f"(default {AUTO_MAX_ROUNDS})") in text
    assert f"(default {DEFAULT_MIN_EFFECT:g}; 0 to {MIN_EFFECT_MAX:g})" in text
    assert f"(default {DEFAULT_TURN_MS:g}; at most {MAX_TURN_MS})" in text
    assert f"{' or '.join(AB_SCHEDULES)} (default {DEFAULT_SCHEDULE})" in text
    for command in (("compare",), ("summarize",)):
        assert f"0 to {MIN_EFFECT_MAX:g}" in help_text(*command)
    for command in (("ab",), ("compare",)):
        assert f"(a CI gate; needs {GATE_MIN_ROUNDS} rounds or more" in help_text(*command)
        assert f"--fail-on TEXT {', '.join(FAIL_ONS[:-1])} or {FAIL_ONS[-1]}: exit 1" in \
            help_text(*command)


def test_the_gate_minimum_is_the_fewest_rounds_whose_interval_reaches_the_confidence() -> None:
    # Typed in spec/ab_model.py so that `--help` needs no scipy; the statistics decide it.
    fewest = next(n for n in range(1, MAX_ROUNDS + 1)
                  if median_interval([0.0] * n, CONFIDENCE).reached)
    assert fewest == GATE_MIN_ROUNDS
    assert MIN_ROUNDS <= GATE_MIN_ROUNDS <= DEFAULT_ROUNDS <= MAX_ROUNDS


def test_the_settings_hold_the_declared_defaults_and_bounds() -> None:
    settings = resolve_settings(bench(), AbChoices())
    assert (settings.rounds, settings.min_effect, settings.schedule) == (
        DEFAULT_ROUNDS, DEFAULT_MIN_EFFECT, DEFAULT_SCHEDULE)
    assert parse_rounds("auto") == (DEFAULT_ROUNDS, AUTO_MAX_ROUNDS)
    assert resolve_settings(bench(), AbChoices(rounds=MAX_ROUNDS)).rounds == MAX_ROUNDS
    for rounds in (MIN_ROUNDS - 1, MAX_ROUNDS + 1):
        with pytest.raises(UserError, match=f"give {MIN_ROUNDS} to {MAX_ROUNDS} "):
            resolve_settings(bench(), AbChoices(rounds=rounds))
    with pytest.raises(UserError, match="is not one of interleaved, sequential"):
        resolve_settings(bench(), AbChoices(schedule="both"))


COMPARE = ["compare", "a", "b"]
AB = ["ab", "--bench", "b"]
EFFECTS = f"0 to {MIN_EFFECT_MAX:g}"
TURNS = f"0 (excluded) to {MAX_TURN_MS}"  # a turn of 0 ms is no turn


@pytest.mark.parametrize(("field", "command", "value", "problem"), [
    ("min_effect", COMPARE, -1.0, f"-1 is not within {EFFECTS}"),
    ("min_effect", COMPARE, MIN_EFFECT_MAX + 1, f"{MIN_EFFECT_MAX + 1:g} is not within {EFFECTS}"),
    ("min_effect", COMPARE, math.nan, "nan is not a finite number"),
    ("turn_ms", AB, 0.0, f"0 is not within {TURNS}"),
    ("turn_ms", AB, -1.0, f"-1 is not within {TURNS}"),
    ("turn_ms", AB, MAX_TURN_MS + 1, f"{MAX_TURN_MS + 1} is not within {TURNS}"),
    ("turn_ms", AB, math.nan, "nan is not a finite number"),
])
def test_the_settings_refuse_a_float_in_the_options_words(
        field: str, command: list[str], value: float, problem: str) -> None:
    # Through the API, past the option's callback: a UserError, not the block's
    # ValidationError, in the words the command line says it with.
    option = "--" + field.replace("_", "-")
    with pytest.raises(UserError) as caught:
        resolve_settings(bench(), AbChoices(**{field: value}))
    assert caught.value.message == f"{option}: {problem}"
    result = CliRunner().invoke(cli.app, [*command, option, str(value)])
    assert result.exit_code == 2
    assert f"'{option}': {problem}" in " ".join(result.output.split())


@pytest.mark.parametrize(("field", "largest"), [("min_effect", MIN_EFFECT_MAX),
                                                ("turn_ms", MAX_TURN_MS)])
def test_the_settings_take_a_float_options_largest_value(field: str, largest: float) -> None:
    assert getattr(resolve_settings(bench(), AbChoices(**{field: largest})), field) == largest


@pytest.mark.parametrize("value", [-1.0, MIN_EFFECT_MAX + 1, math.nan])
def test_compare_and_summarize_refuse_a_min_effect_given_through_the_api(
        value: float, tmp_path: Path) -> None:
    # Before any file is read: the folders here do not exist.
    with pytest.raises(UserError, match="^--min-effect: "):
        compare_runs(tmp_path / "base", tmp_path / "new", value)
    with pytest.raises(UserError, match="^--min-effect: "):
        summarize_ab(tmp_path / "ab", value)


@pytest.mark.parametrize("field, value", [("rounds", MAX_ROUNDS + 1),
                                          ("rounds", MIN_ROUNDS - 1),
                                          ("min_effect", MIN_EFFECT_MAX + 1),
                                          ("turn_ms", MAX_TURN_MS + 1)])
def test_the_block_refuses_past_the_declared_bounds(field: str, value: float) -> None:
    inside = {"rounds": MAX_ROUNDS, "min_effect": MIN_EFFECT_MAX, "turn_ms": MAX_TURN_MS}
    AbSpec.model_validate({"switch": "KB_X", field: inside[field]})
    with pytest.raises(ValueError, match=field):
        AbSpec.model_validate({"switch": "KB_X", field: value})


def test_resume_refuses_every_declared_choice(tmp_path: Path) -> None:
    from kernbench.ab.run import ab

    for name in AB_CHOICES:
        with pytest.raises(UserError, match=f"drop --{name.replace('_', '-')}$"):
            ab(None, tmp_path, **{name: "1"})


def test_the_timer_floor_is_declared_once() -> None:
    from kernbench.spec.timer_model import MIN_SAMPLES, TimerSpec, turn_spec

    schema = json.loads(SCHEMA.read_text())["$defs"]["TimerSpec"]["properties"]
    assert schema["min_samples"]["minimum"] == schema["max_samples"]["minimum"] == MIN_SAMPLES
    one_turn = turn_spec(TimerSpec(min_samples=MIN_SAMPLES, max_samples=MIN_SAMPLES), 100)
    assert (one_turn.min_samples, one_turn.max_samples) == (MIN_SAMPLES, MIN_SAMPLES)
