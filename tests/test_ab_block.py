"""A bench's `ab:` block whose settings contradict one another is refused at its line when
the bench loads (`validate` and `ab` alike): `validate` passed them, and `ab` named
command-line options the user had never typed (`--rounds: auto:3`, `--a/--b`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.ab.settings import AbChoices, resolve_settings
from kernbench.errors import SpecError
from kernbench.spec.ab_model import AbSpec
from kernbench.spec.loader import load_bench

BENCH = """\
name: blk
description: an ab block
kernel: sleep
axes:
  work_us: [10]
ab: {block}
"""


@pytest.mark.parametrize(("block", "message"), [
    ("{switch: KB_X, a: null, b: null}",
     "ab.b: a and b are both null (unset): the A/B would compare a side with itself"),
    ("{switch: KB_X, a: '1', b: '1'}",
     "ab.b: a and b are both '1': the A/B would compare a side with itself"),
    ("{switch: KB_X, max_rounds: 3}",
     "ab.max_rounds: 3 is below rounds (6): rounds are added past rounds, up to max_rounds"),
    # validated, then refused by `ab` as `--turn-ms: 20000`, a flag never typed
    ("{switch: KB_X, turn_ms: 20000}", "ab.turn_ms: Input should be less than or equal to "
     "10000 (got 20000)"),
    ("{switch: KB_X, schedule: sequential, turn_ms: 5}",
     "ab.turn_ms: the sequential schedule takes no turns (each side is a whole run); drop "
     "turn_ms, or use schedule: interleaved"),
])
def test_an_ab_block_that_contradicts_itself_is_refused_at_its_line(
    tmp_path: Path, block: str, message: str
) -> None:
    path = tmp_path / "blk.yaml"
    path.write_text(BENCH.format(block=block))
    with pytest.raises(SpecError) as caught:
        load_bench(path)
    assert str(caught.value) == f"{path}:6: {message}"


@pytest.mark.parametrize(("block", "loaded"), [
    ("{switch: KB_X, a: null}", {"a": None, "b": "1"}),
    ("{switch: KB_X, rounds: 4, max_rounds: 4}", {"rounds": 4, "max_rounds": 4}),
    ("{switch: KB_X, turn_ms: 5}", {"schedule": "interleaved", "turn_ms": 5}),
    ("{switch: KB_X, schedule: sequential}", {"schedule": "sequential", "turn_ms": None}),
])
def test_an_ab_block_that_agrees_with_itself_loads(
    tmp_path: Path, block: str, loaded: dict[str, object]
) -> None:
    path = tmp_path / "blk.yaml"
    path.write_text(BENCH.format(block=block))
    ab = load_bench(path).ab
    assert ab is not None
    assert ab.model_dump() == {**AbSpec(switch="KB_X").model_dump(), **loaded}


def test_the_blocks_turn_length_is_dropped_when_the_command_line_asks_sequential(
    tmp_path: Path,
) -> None:
    path = tmp_path / "blk.yaml"
    path.write_text(BENCH.format(block="{switch: KB_X, turn_ms: 5}"))
    bench = load_bench(path)
    assert resolve_settings(bench, AbChoices()).turn_ms == 5
    # a turn is the interleaved schedule's: kept, it would be recorded and never used
    assert resolve_settings(bench, AbChoices(schedule="sequential")).turn_ms is None
