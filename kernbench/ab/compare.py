"""Two saved runs of a bench, cell by cell: did NEW get faster or slower than BASE?

The runs were taken apart (another commit, another day), so nothing pairs a BASE round
with a NEW one: each side's round medians are replicates. Per cell the estimate is the
median of every pairwise log ratio log(new_j / base_i) (Hodges-Lehmann), and its
interval the order statistics of those ratios that the Mann-Whitney distribution gives a
95 % coverage (distribution-free); with too few rounds for 95 % (3 against 3 reaches
90 %), the widest pair and its own coverage, as `ab` does. The verdicts are `ab`'s
(threshold: `min_effect`; no A/A floor here): a side with a single round shows no spread,
so such a cell is `unstable`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from kernbench.ab.gate import STOPPED_FAILS, failing, weak_caveat
from kernbench.ab.verdicts import geomean_ratio, to_pct, verdict
from kernbench.analyze.stats import CONFIDENCE
from kernbench.errors import UserError
from kernbench.results.ab import VERDICT_MEANINGS, VERDICTS, Verdict
from kernbench.results.model import CellResult, Results
from kernbench.spec.ab_model import MIN_ROUNDS, FailOn
from kernbench.units import counted, seconds_text, signed_pct


@dataclass(frozen=True)
class CellComparison:
    id: str
    verdict: Verdict
    delta_pct: float
    ci_pct: tuple[float, float]
    coverage: float
    base_s: float  # median of BASE's round medians
    new_s: float
    rounds: tuple[int, int]  # BASE's and NEW's measured rounds; under MIN_ROUNDS: unstable


@dataclass(frozen=True)
class Comparison:
    cells: list[CellComparison]
    only_in_base: list[str]
    only_in_new: list[str]
    stopped_working: list[str]  # in both: measured in BASE, failed or invalid in NEW
    not_ok: list[str]  # in both, but failed or invalid in BASE
    min_effect_pct: float
    # In both, but not measured yet in one (a run stopped before its end): neither a
    # regression nor a failure, so no gate fails on it.
    pending: list[str] = field(default_factory=list)


@cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many orderings of m BASE and n NEW values give each Mann-Whitney U (0..m*n)."""
    if m == 0 or n == 0:
        return (1,)
    size = m * n + 1
    counts = [0] * size
    for u, ways in enumerate(_u_counts(m - 1, n)):  # the largest value is BASE's
        counts[u] += ways
    for u, ways in enumerate(_u_counts(m, n - 1)):  # ... or NEW's, above all m BASE values
        counts[u + m] += ways
    return tuple(counts)


def shift_interval(base: list[float], new: list[float]) -> tuple[float, float, float, float]:
    """(estimate, low, high, coverage) of the shift new - base, from pairwise differences."""
    diffs = sorted(y - x for x in base for y in new)
    counts = _u_counts(len(base), len(new))
    total = sum(counts)
    rank, tail = 1, counts[0] / total  # P(U <= rank - 1)
    while rank < len(diffs) // 2:
        below = tail + counts[rank] / total
        if 1 - 2 * below < CONFIDENCE:
            break
        rank, tail = rank + 1, below
    return (float(np.median(diffs)), diffs[rank - 1], diffs[len(diffs) - rank], 1 - 2 * tail)


def least_rounds(confidence: float = CONFIDENCE) -> int:
    """The fewest rounds a side (as many on each) whose widest interval reaches `confidence`."""
    rounds = MIN_ROUNDS
    while 1 - 2 / sum(_u_counts(rounds, rounds)) < confidence:
        rounds += 1
    return rounds


def compare(base: Results, new: Results, min_effect_pct: float, force: bool = False) -> Comparison:
    _check_comparable(base, new, force)
    base_cells = {c.id: c for c in base.cells}
    new_cells = {c.id: c for c in new.cells}
    cells: list[CellComparison] = []
    stopped: list[str] = []
    not_ok: list[str] = []
    pending: list[str] = []
    for cell_id, before in base_cells.items():
        after = new_cells.get(cell_id)
        if after is None:
            continue
        if "pending" in (before.status, after.status):
            pending.append(cell_id)
            continue
        b, n = _round_medians(before), _round_medians(after)
        if not b or not n:
            (stopped if b else not_ok).append(cell_id)
            continue
        estimate, low, high, coverage = shift_interval(
            [math.log(x) for x in b], [math.log(y) for y in n]
        )
        low_pct, high_pct = to_pct(low), to_pct(high)
        cells.append(CellComparison(
            cell_id, verdict(low_pct, high_pct, min_effect_pct, rounds=min(len(b), len(n))),
            to_pct(estimate), (low_pct, high_pct), coverage, float(np.median(b)),
            float(np.median(n)), (len(b), len(n)),
        ))
    return Comparison(
        cells=cells,
        only_in_base=[i for i in base_cells if i not in new_cells],
        only_in_new=[i for i in new_cells if i not in base_cells],
        stopped_working=stopped,
        not_ok=not_ok,
        min_effect_pct=min_effect_pct,
        pending=pending,
    )


def _round_medians(cell: CellResult) -> list[float]:
    if cell.status != "ok":
        return []
    # A median that is not a positive time (a timer's overhead subtracted past the call)
    # has no log: such a round is left out, as one without a median.
    return [r.median_s for r in cell.rounds
            if r.status == "ok" and r.median_s is not None and 0 < r.median_s < math.inf]


def _check_comparable(base: Results, new: Results, force: bool) -> None:
    differences = [
        f"{what} {a!r} against {b!r}"
        for what, a, b in (
            ("bench", base.bench, new.bench),
            ("device", base.device, new.device),
            ("device name", base.provenance.get("device_name"), new.provenance.get("device_name")),
        )
        if a != b
    ]
    if differences and not force:
        raise UserError(f"the runs differ: {'; '.join(differences)} (--force compares anyway)")


def gate(comparison: Comparison, fail_on: FailOn | None) -> list[str]:
    """Why `compare --fail-on` fails (a line per reason); none: it passes. The cells called
    so, and under slower or any the cells that stopped working too."""
    called = failing(comparison.cells, fail_on)
    caveat = weak_caveat(c.coverage for c in called)
    reasons = [f"{counted(len(called), 'cell')} {fail_on}{caveat}: "
               f"{', '.join(c.id for c in called)}"] if called else []
    if fail_on in STOPPED_FAILS and comparison.stopped_working:
        reasons.append(f"{counted(len(comparison.stopped_working), 'cell')} stopped working "
                       f"(measured in BASE, failed or invalid in NEW): "
                       f"{_listed(comparison.stopped_working)}")
    return reasons


def markdown(comparison: Comparison, base: str, new: str, sides: Sequence[str] = ()) -> str:
    """`sides`: a line saying where and with what each side was measured, BASE's first."""
    lines = [
        f"# {new} against {base}", "",
        *(f"- {side}" for side in sides), *([""] if sides else []),
        f"Per cell: the median of every NEW/BASE round-median ratio, 100·(NEW/BASE − 1), and "
        f"its order-statistic interval (Mann-Whitney); threshold "
        f"±{comparison.min_effect_pct:g} %. Positive means NEW is slower. {VERDICT_MEANINGS} "
        f"BASE time, NEW time: the time of one call, each side's round medians' median.", "",
        *_summary(comparison), "",
        "| cell | verdict | delta | interval | coverage | BASE time | NEW time |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in comparison.cells:
        lines.append(
            f"| {c.id} | {c.verdict} | {signed_pct(c.delta_pct)} % | "
            f"[{signed_pct(c.ci_pct[0])} %, {signed_pct(c.ci_pct[1])} %] | "
            f"{100 * c.coverage:.1f} % | {seconds_text(c.base_s, 4)} | {seconds_text(c.new_s, 4)} |"
        )
    for title, ids in (("Only in BASE", comparison.only_in_base),
                       ("Only in NEW", comparison.only_in_new),
                       ("Stopped working (failed or invalid in NEW)",
                        comparison.stopped_working),
                       ("Failed or invalid in BASE", comparison.not_ok),
                       ("Pending (not measured yet: the run stopped before them)",
                        comparison.pending)):
        if ids:
            lines += ["", f"{title}: {_listed(ids)}"]
    return "\n".join(lines) + "\n"


LISTED = 10  # more cells than this are counted per variant (compare.json lists them all)


def _summary(comparison: Comparison) -> list[str]:
    """The verdict counts and the geometric mean of NEW/BASE over the cells in both (of
    their estimates, as `ab` summarizes its variants)."""
    cells = comparison.cells
    if not cells:
        return ["No cell was measured in both runs."]
    counts = ", ".join(f"{v} {sum(c.verdict == v for c in cells)}" for v in VERDICTS)
    geomean = geomean_ratio([c.delta_pct for c in cells])
    few = sum(min(c.rounds) < MIN_ROUNDS for c in cells)
    return [
        f"- Verdicts: {counts} (of {counted(len(cells), 'cell')} in both).",
        f"- Geometric mean of NEW/BASE over those cells: {geomean:.4f} "
        f"({signed_pct(100 * (geomean - 1))} %).",
        *([f"- {counted(few, 'cell')} with fewer than {MIN_ROUNDS} rounds on a side: unstable, "
           "whatever their interval (measure more rounds)."] if few else []),
        *_coverage_note(cells),
    ]


def _coverage_note(cells: list[CellComparison]) -> list[str]:
    """Where the rounds were too few for a 95 % interval: how many false calls to expect
    of a change that did nothing (each such interval misses it with 1 - its coverage)."""
    weak = [c for c in cells if min(c.rounds) >= MIN_ROUNDS and c.coverage < CONFIDENCE]
    if not weak:
        return []
    lowest = min(c.coverage for c in weak)
    expected = sum(1 - c.coverage for c in weak)
    return [f"- {counted(len(weak), 'cell')} on intervals under {CONFIDENCE:.0%} coverage "
            f"(as low as {lowest:.1%}): a change that did nothing would still be called faster or "
            f"slower in up to {expected:.1f} of them. Measure at least {least_rounds()} "
            f"rounds a side for {CONFIDENCE:.0%}."]


def _listed(ids: list[str]) -> str:
    if len(ids) <= LISTED:
        return ", ".join(ids)
    per_variant = Counter(cell_id.split("/")[0] for cell_id in ids)
    shown = ", ".join(f"{variant} {count}" for variant, count in per_variant.items())
    return f"{counted(len(ids), 'cell')} ({shown}; `--out` writes every id to compare.json)"
