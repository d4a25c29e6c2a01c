"""The ladders every printed or drawn quantity climbs: time in s, ms, µs, ns, and rates in
SI prefixes, and sizes in binary units. The run's progress lines, the report, the figures
and the scripts each format with them, in their own digits and spelling. And the digits a
signed percentage delta is written with, and a count or a list of labels with its noun."""

from __future__ import annotations

import math
from collections.abc import Sequence

TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))  # largest first
# SI prefixes for rates, largest first: a rate is shown with the largest that keeps it >= 1.
SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
# Units written as symbols, which take a prefix without a space (TFLOP/s, GB/s); any other
# is a word of the bench's (`elements/s` of a `rates:` count) and keeps one: G elements/s.
SYMBOL_UNITS = ("FLOP/s", "B/s")


def time_unit(seconds: float) -> tuple[float, str]:
    """The scale and unit that show `seconds` with one to three integer digits (ns below)."""
    return next(((s, u) for s, u in TIME_UNITS if seconds >= s), TIME_UNITS[-1])


def seconds_text(seconds: float, digits: int = 3) -> str:
    """A duration in the unit that gives it one to three integer digits, to `digits`
    significant digits: '2.96 µs', not '2.964e-06 s'."""
    if not math.isfinite(seconds):
        return str(seconds)
    scale, unit = time_unit(abs(seconds))
    return f"{seconds / scale:.{digits}g} {unit}"


# Deltas of 100 % and more (a path 6 or 20 times slower) are written to the unit: two
# decimals there ("+1893.62") claim five significant digits an interval of 1879 to 2104
# does not hold; below, two decimals resolve the tenths of a percent an A/B is about.
WHOLE_PCT_FROM = 100.0


def signed_pct(value: float) -> str:
    """A percentage delta with its sign, without the % sign: '+1.85', '-0.03', '+1894'."""
    if not math.isfinite(value):
        return "n/a"
    return f"{value:+.0f}" if abs(value) >= WHOLE_PCT_FROM else f"{value:+.2f}"


def si_prefix(value: float) -> tuple[float, str]:
    """The scale and SI prefix that show `value` with one to three integer digits (no
    prefix below one)."""
    return next(((s, p) for s, p in SI_PREFIXES if value >= s), SI_PREFIXES[-1])


def prefixed(prefix: str, unit: str) -> str:
    """`unit` with an SI prefix: TFLOP/s, G elements/s."""
    if not prefix:
        return unit
    return f"{prefix}{unit}" if unit in SYMBOL_UNITS else f"{prefix} {unit}"


# The unit of each metric kernbench computes, as a reader (or a tracker's chart axis) wants
# it; results.json and the export's columns keep the names.
METRIC_UNITS = {"time_s": "s", "model_time_s": "s", "tflops": "TFLOP/s", "gbs": "GB/s",
                "busbw_gbs": "GB/s", "algbw_gbs": "GB/s", "util": "fraction of peak",
                "model_util": "fraction of peak"}


def format_bytes(size: float) -> str:
    """1024 -> '1 KiB'; binary units, up to three integer digits."""
    for power, unit in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if size >= 1024**power:
            return f"{size / 1024**power:g} {unit}"
    return f"{size:g} B"


def count_rate_unit(count: str) -> str:
    """The unit of a `rates:` count's rate per second: `elements/s`."""
    return f"{count}/s"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, plural unless there is one: '1 cell', '3 cells'; `plural` where
    adding an s is wrong: counted(2, "launch", "launches")."""
    return f"{n} {_noun(n, noun, plural)}"


def labelled(noun: str, items: Sequence[object], plural: str | None = None) -> str:
    """`noun` and the labels of `items`, plural unless there is one: 'round 3',
    'rounds 1, 2'; `plural` as in `counted`."""
    return f"{_noun(len(items), noun, plural)} {', '.join(map(str, items))}"


def _noun(n: int, noun: str, plural: str | None) -> str:
    return noun if n == 1 else plural or noun + "s"
