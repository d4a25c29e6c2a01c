"""The time-unit ladder every printed or drawn duration climbs: s, ms, µs, ns. The run's
progress lines and the figures each format with it, in their own digits and spelling.
And the digits a signed percentage delta is written with."""

from __future__ import annotations

import math

TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))  # largest first


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
