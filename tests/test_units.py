"""The time-unit ladder, climbed alike by the run's progress lines (ASCII, 4 digits) and the
figures (µs, 3 digits)."""

from __future__ import annotations

import pytest

from kernbench.execute.progress import format_time
from kernbench.render.style import format_seconds
from kernbench.units import time_unit


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(2.5, (1.0, "s")), (1e-3, (1e-3, "ms")), (4.2e-5, (1e-6, "µs")), (7e-9, (1e-9, "ns")),
     (0.0, (1e-9, "ns"))],
)
def test_the_ladder_keeps_one_to_three_integer_digits(seconds, expected) -> None:
    assert time_unit(seconds) == expected


@pytest.mark.parametrize(
    ("seconds", "progress", "figure"),
    [(1.23456, "1.235 s", "1.23 s"), (4.25678e-5, "42.57 us", "42.6 µs"),
     (9.876e-4, "987.6 us", "988 µs"), (3e-10, "0.3 ns", "0.3 ns")],
)
def test_progress_and_figures_climb_one_ladder_in_their_own_spelling(
    seconds, progress, figure
) -> None:
    assert format_time(seconds) == progress
    assert format_seconds(seconds) == figure
