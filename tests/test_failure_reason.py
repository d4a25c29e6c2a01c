"""A failed cell's reason names where the code raised (the traceback stays in extra)."""

from __future__ import annotations

import json

from kernbench.execute.worker import fail
from kernbench.kernels.failure import REASON_CHARS, one_line, raised_at
from kernbench.results.model import RoundResult


def _make(n: int) -> None:
    raise RuntimeError(f"boom in factory n={n}")


def _parse_in_the_library() -> None:
    json.loads("{not json")


def test_the_reason_names_the_innermost_frame() -> None:
    result = RoundResult(round=1, status="ok")
    try:
        _make(3)
    except RuntimeError as exc:
        fail(result, exc)
    line = _make.__code__.co_firstlineno + 1
    assert result.status == "failed"
    assert result.reason == (
        f"RuntimeError: boom in factory n=3 (test_failure_reason.py:{line}, in _make)"
    )
    assert "boom in factory n=3" in result.extra["traceback"]


def test_a_library_frame_gives_way_to_the_code_that_called_it() -> None:
    try:
        _parse_in_the_library()
    except json.JSONDecodeError as exc:
        where = raised_at(exc)
    line = _parse_in_the_library.__code__.co_firstlineno + 1
    assert where == f"test_failure_reason.py:{line}, in _parse_in_the_library"


def test_a_long_message_is_cut_before_the_place_is_added() -> None:
    reason = one_line(ValueError("x" * 2000), "mod.py:1, in make")
    assert reason.endswith(" (mod.py:1, in make)")
    assert len(reason) == REASON_CHARS + len(" (mod.py:1, in make)")
    assert one_line(ValueError("no place")) == "ValueError: no place"
