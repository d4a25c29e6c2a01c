"""A rate is a count of work over a time: one function for every rate kernbench stores
(TFLOP/s, GB/s, algbw, a `rates:` count per second, and the calibration's ceilings) with
their units, and one for the interval a rate's time interval maps to. TFLOP/s, GB/s and
algbw were each divided out in their own place, and the interval mapped in three
renderers."""

from __future__ import annotations

# The units of the stored rates and of the profile's ceilings: `tflops` in TFLOP/s, `gbs`
# (and the collective model's algbw and busbw) in GB/s.
TFLOP = 1e12
GB = 1e9
# The rates kernbench derives from a cell's counts over its median time (`util`: its
# tflops over the dtype's ceiling), in the order a report's tables show them; a bench's
# `rates:` add their own (`model_metrics.rate_name`).
RATE_METRICS = ("tflops", "gbs", "busbw_gbs", "algbw_gbs", "util")


def per_second(amount: float, seconds: float, unit: float = 1.0) -> float:
    """`amount` per second in `unit`s (1e9 for GB/s): amount / seconds / unit. A time at or
    below zero (a flush estimate subtracted past the call) is the caller's to refuse."""
    return amount / seconds / unit


def rate_bounds(rate: float, median_s: float, ci_low_s: float,
                ci_high_s: float) -> tuple[float, float] | None:
    """The interval of a rate measured at `median_s`, from its time's [ci_low_s, ci_high_s]:
    a rate is inversely proportional to time, so the slow end bounds it below. None where
    the time's interval reaches zero (no rate bounds it above)."""
    if ci_low_s <= 0 or ci_high_s <= 0:
        return None
    return rate * median_s / ci_high_s, rate * median_s / ci_low_s
