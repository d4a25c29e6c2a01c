"""What the report's columns and flags mean, said once above its tables, and only for the
ones that appear: a reader meeting `throttled 34%` or `settled 1/2` in row 40 of 180 should
not have to search the docs for what it counts."""

from __future__ import annotations

from kernbench.analyze.stats import RESOLUTION_FACTOR
from kernbench.results.model import CellResult, Results, Summary
from kernbench.spec.hardware import ceiling_source
from kernbench.spec.model_metrics import rate_name
from kernbench.units import count_rate_unit

# What each timer's time holds (ADR 0030, 0048), where one table mixes them.
TIMER_MEANINGS = {
    "event": "event: CUDA events around each call, its launch gap included",
    "graph": "graph: CUDA graph replays of many calls (auto picks it for short calls), no "
             "launch gaps, under a cold L2 the flushes' own replay subtracted",
    "cupti": "cupti: the call's kernels' durations on the GPU (CUPTI), no launch or event "
             "overhead",
    "cpu": "cpu: the host clock around a loop of calls",
}
# `kernbench compare` times a cell by its round medians (replicates for its interval):
# where the rounds disagree that differs from the pooled median, so the page says which.
COMPARE_TIME = ("kernbench compare's BASE and NEW times are the median of the round "
                "medians instead, which differs where rounds disagree")
# An unsteady cell's interval column: the CI widened to span the round medians.
UNSTEADY_SPAN = "(spans the rounds, not a CI)"
THROTTLED_FLAG = 0.05  # flag a cell when more than this share of its samples was throttled


def legend(results: Results) -> list[str]:
    """One line per column or flag that needs saying, in the order the tables show them."""
    cells = results.cells
    lines = ["median: the time of one call, the median of every round's samples pooled "
             f"({COMPARE_TIME}); round medians: how many rounds, and the least and largest "
             "of their medians"]
    lines += _rates(results)
    timers = {r.timer for c in cells for r in c.rounds if r.timer}
    if len(timers) > 1:
        lines.append("timer: what timed the cell, as the bench's timer picked it per cell; "
                     + "; ".join(TIMER_MEANINGS[t] for t in sorted(timers) if t in TIMER_MEANINGS)
                     + ". Cells timed differently differ by the launch gap one includes")
    if any(r.settle for c in cells for r in c.rounds):
        lines.append("settled: the settle phases (one a round, or one a turn) that ended with "
                     "two blocks of calls agreeing within "
                     f"±{100 * results.timer_setting('settle_tol'):g}%, of those run; the "
                     "others stopped at their time limit, the GPU's clock possibly still moving")
    if any("util" in c.metrics for c in cells):
        lines.append("% of dtype peak: the cell's TFLOP/s over the hardware profile's peak "
                     f"for its dtype ({_peaks(results)}); Best per variant divides by the "
                     "cell's roofline instead, the same where compute, not memory or a "
                     "host copy, holds the cell")
    if any(c.status == "invalid" for c in cells):
        lines.append("invalid: a result that cannot be true, such as one faster than the "
                     "datasheet roofline allows (the reason follows)")
    if any(c.under_tile for c in cells):
        lines.append("under-tile: a dimension smaller than the kernel's tile, so part of "
                     "each tile computes padding and the rate understates the hardware")
    if any(c.unsteady for c in cells):
        lines.append("unsteady: the round medians differ (largest / least − 1) by more than "
                     f"the timer's steady_tol of {100 * results.timer_setting('steady_tol'):g}%: "
                     "the time moved between rounds, so one median hides it; its interval "
                     f"spans the round medians and the pooled CI, marked {UNSTEADY_SPAN}")
    if any((c.throttled_fraction or 0) > THROTTLED_FLAG for c in cells):
        lines.append("throttled N%: the share of the cell's NVML readings (one a batch of "
                     "samples) reporting a slowdown (power cap, thermal or hardware "
                     f"slowdown); shown above {THROTTLED_FLAG:.0%}, where the time may be "
                     "slower than the card's sustained clock gives")
    return lines


def _peaks(results: Results) -> str:
    """Each dtype's peak the `util` column divides by, and whether it was measured."""
    profile = results.hardware_profile()
    dtypes = sorted({str(c.params.get("dtype")) for c in results.cells if "util" in c.metrics})
    if profile is None:
        return "measured where calibrated, else the datasheet"
    named = []
    for dtype in dtypes:
        peak = profile.peak_tflops.get(dtype)
        if peak is not None:
            named.append(f"{dtype} {peak.value:.4g} TFLOP/s, {ceiling_source(profile, peak)}")
    return "; ".join(named) or "measured where calibrated, else the datasheet"


def _rates(results: Results) -> list[str]:
    """What a rate column divides by the median: the bench's own count of the work, which
    a reader must know to compare it with another tool's (is a norm's `bytes` read and
    written once, or every pass?)."""
    present = {name for c in results.cells for name in c.metrics}
    declared = results.spec.get("metrics") or {}
    lines = []
    if "tflops" in present:
        lines.append(f"TFLOP/s: the bench's flops per call ({declared.get('flops', 'flops')}) "
                     "over the median, 1 TFLOP = 10¹² operations")
    if "busbw_gbs" in present:
        lines.append("busbw GB/s: the bus bandwidth of nccl-tests, algbw times the op's "
                     "factor (allreduce 2(n−1)/n, allgather and reduce_scatter (n−1)/n); "
                     "algbw GB/s: the message's bytes over the median, 1 GB = 10⁹ bytes")
    elif "gbs" in present:
        lines.append(f"GB/s: the bench's bytes per call ({declared.get('bytes', 'bytes')}) "
                     "over the median, 1 GB = 10⁹ bytes")
    for count in results.spec.get("rates") or []:
        unit = count_rate_unit(count)
        if rate_name(count) in present:
            lines.append(f"{unit}: the bench's {count} per call ({declared.get(count, count)}, "
                         f"in {count}, the column beside it) over the median, with the SI "
                         f"prefix of the column's largest value (M {unit} = 10⁶ {unit})")
    return lines


def cell_flags(cell: CellResult) -> list[str]:
    """The flags of a cell's row, each explained by `legend` where it appears."""
    flags = []
    if cell.status == "invalid":
        flags.append(f"invalid: {cell.reason}")
    if cell.under_tile:
        flags.append("under-tile")
    if cell.unsteady:
        flags.append(f"unsteady: rounds differ by {100 * (cell.round_spread or 0):.1f}%")
    if cell.unresolved and cell.summary is not None:
        flags.append(f"unresolved: the CI reaches {_reach(cell.summary)}")
    if cell.throttled_fraction and cell.throttled_fraction > THROTTLED_FLAG:
        flags.append(f"throttled {100 * cell.throttled_fraction:.0f}%")
    if cell.status in ("failed", "pending"):
        flags.append(cell.status)
    return flags


def _reach(summary: Summary) -> str:
    """How far an unresolved median's interval reaches past a factor of two of it."""
    if summary.ci_low_s <= 0:
        return "0"
    if summary.ci_low_s * RESOLUTION_FACTOR <= summary.median_s:
        return "below half the median"
    return "above twice the median"
