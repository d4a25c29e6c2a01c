"""The interleaved schedule's progress line for a cell: the same round delta as ab.json."""

from __future__ import annotations

import math

from kernbench.ab.interleave import cell_pairs, round_delta
from kernbench.ab.interleaved import describe
from kernbench.ab.verdicts import to_pct
from kernbench.results.ab import CellTurns


def test_the_progress_line_gives_the_round_delta_the_analysis_takes() -> None:
    # Four ABBA pairs whose middle two ratios are 1.5 and 1.9: the median of the log ratios
    # (what ab.json keeps) is +68.82 %, the median of the ratios +70.00 %.
    ratios = [1.2, 1.5, 1.9, 2.4]
    blocks = [0, 0, 1, 1, 2, 2, 3, 3]
    sides = ["A", "B", "B", "A", "A", "B", "B", "A"]
    medians = []
    for block, side in zip(blocks, sides, strict=True):
        medians.append(1e-3 * (ratios[block] if side == "B" else 1.0))
    turns = CellTurns(calls_per_turn=3, turns_per_side=4, sides=sides, medians_s=medians,
                      blocks=blocks)
    analysed = to_pct(round_delta(cell_pairs(turns, "B")))
    assert math.isclose(analysed, 100 * (math.sqrt(1.5 * 1.9) - 1))
    assert describe(turns) == f"B/A {analysed:+.2f}%; 4 turns x 3 calls"
