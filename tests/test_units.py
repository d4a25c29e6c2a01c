"""The time-unit ladder, climbed alike by the run's progress lines (ASCII, 4 digits) and the
figures (µs, 3 digits), and sizes in binary units."""

from __future__ import annotations

import pytest

from kernbench.execute.progress import format_time
from kernbench.units import counted, format_bytes, labelled, seconds_text, time_unit


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
    assert seconds_text(seconds) == figure


def test_a_delta_of_100_percent_or_more_is_written_to_the_unit():
    # An A/B's report read "+1893.62 %" in [+1878.84 %, +2104.08 %]: five significant
    # digits an interval two hundred points wide does not hold.
    from kernbench.units import signed_pct

    assert [signed_pct(v) for v in (1893.62, -0.034, 99.994, 100.4, -250.6)] == [
        "+1894", "-0.03", "+99.99", "+100", "-251"]
    assert signed_pct(float("nan")) == "n/a"


@pytest.mark.parametrize(
    ("size", "text"), [(512, "512 B"), (1024, "1 KiB"), (3 * 2**20, "3 MiB"), (2**30, "1 GiB")]
)
def test_byte_labels(size: int, text: str) -> None:
    assert format_bytes(size) == text


@pytest.mark.parametrize(
    ("n", "noun", "plural", "text"),
    [(1, "cell", None, "1 cell"), (0, "cell", None, "0 cells"), (3, "round", None, "3 rounds"),
     (1, "more cell", None, "1 more cell"), (1, "launch", "launches", "1 launch"),
     (2, "launch", "launches", "2 launches")],
)
def test_a_count_takes_its_noun_in_the_singular_only_for_one(n, noun, plural, text) -> None:
    assert counted(n, noun, plural) == text


@pytest.mark.parametrize(
    ("noun", "items", "plural", "text"),
    [("round", [3], None, "round 3"), ("round", [1, 2], None, "rounds 1, 2"),
     ("shard", ["2/4", "4/4"], None, "shards 2/4, 4/4"),
     ("batch", [1, 2], "batches", "batches 1, 2")],
)
def test_labels_take_their_noun_in_the_singular_only_for_one(noun, items, plural, text) -> None:
    assert labelled(noun, items, plural) == text
