"""What the report's columns and flags mean, said once above its tables, and only for the
ones that appear: a reader meeting `throttled 34%` or `settled 1/2` in row 40 of 180 should
not have to search the docs for what it counts."""

from __future__ import annotations

from kernbench.results.model import Results

THROTTLED_FLAG = 0.05  # flag a cell when more than this share of its samples was throttled


def legend(results: Results) -> list[str]:
    """One line per column or flag that needs saying, in the order the tables show them."""
    cells = results.cells
    lines = ["median: the time of one call, the median of every round's samples pooled; "
             "round medians: how many rounds, and the least and largest of their medians"]
    if any(r.settle for c in cells for r in c.rounds):
        lines.append("settled: the settle phases (one a round, or one a turn) that ended with "
                     "two blocks of calls agreeing within "
                     f"±{100 * results.timer_setting('settle_tol'):g}%, of those run; the "
                     "others stopped at their time limit, the GPU's clock possibly still moving")
    if any("util" in c.metrics for c in cells):
        lines.append("% of peak: the cell's TFLOP/s against the hardware profile's peak for "
                     "its dtype (measured where calibrated, else the datasheet)")
    if any(c.status == "invalid" for c in cells):
        lines.append("invalid: a result that cannot be true, such as one faster than the "
                     "datasheet roofline allows (the reason follows)")
    if any(c.under_tile for c in cells):
        lines.append("under-tile: a dimension smaller than the kernel's tile, so part of "
                     "each tile computes padding and the rate understates the hardware")
    if any(c.unsteady for c in cells):
        lines.append("unsteady: the round medians differ (largest / least − 1) by more than "
                     f"the timer's steady_tol of {100 * results.timer_setting('steady_tol'):g}%: "
                     "the time moved between rounds, so one median hides it")
    if any((c.throttled_fraction or 0) > THROTTLED_FLAG for c in cells):
        lines.append("throttled N%: the share of the cell's NVML readings (one a batch of "
                     "samples) reporting a slowdown (power cap, thermal or hardware "
                     f"slowdown); shown above {THROTTLED_FLAG:.0%}, where the time may be "
                     "slower than the card's sustained clock gives")
    return lines
