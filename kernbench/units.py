"""The time-unit ladder every printed or drawn duration climbs: s, ms, µs, ns. The run's
progress lines and the figures each format with it, in their own digits and spelling."""

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
