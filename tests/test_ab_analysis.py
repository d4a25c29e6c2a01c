from __future__ import annotations

import math

import numpy as np
import pytest
from ab_fixtures.build import manifest, outcomes

from kernbench.ab.analysis import analyze
from kernbench.ab.failures import RunOutcome
from kernbench.ab.verdicts import aa_floor, aa_p_value, order_effect, verdict
from kernbench.results.ab import AA_ALPHA, AA_MIN_ROUNDS

# Per-round B/A ratios that are never exactly equal, so intervals have width.
JITTER = [1.000, 1.004, 0.997, 1.002, 0.999, 1.003, 0.998, 1.001]


def ratio_plan(ratio_of_round):
    """A MedianOf where B (and only B) runs `ratio_of_round(k)` times A's time."""

    def median_of(run: str, variant: str, size: int) -> float:
        k = int(run[1 : run.index("_")])
        base = size * 1e-6
        return base * ratio_of_round(k) if run.endswith("_B") else base

    return median_of


def test_a_ten_percent_slower_b_is_slower_everywhere():
    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: 1.10 * JITTER[k - 1])))
    assert [c.verdict for c in report.cells] == ["slower"] * 4
    cell = report.cells[0]
    assert cell.round_deltas_pct == pytest.approx([100 * (1.1 * j - 1) for j in JITTER[:6]])
    assert cell.ci_pct == [min(cell.round_deltas_pct), max(cell.round_deltas_pct)]
    assert cell.ci_coverage == pytest.approx(1 - 2 / 64)
    assert cell.ci_reached
    spread = max(cell.round_deltas_pct) - min(cell.round_deltas_pct)
    assert cell.delta_spread_pct == pytest.approx(spread)
    assert cell.sign_flips == 0
    assert cell.threshold_pct == 1.0
    assert report.failed_variants == {}
    assert report.summary.verdicts == {"faster": 0, "slower": 4, "same": 0, "unstable": 0}
    assert report.summary.geomean_ratio["fast"] == pytest.approx(1.10, rel=2e-3)
    assert report.summary.expected_false_calls == pytest.approx(4 * 2 ** (1 - 6))


def test_delta_is_percent_of_time_from_the_log_ratio():
    plan = manifest(rounds=3)
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: 1.25)))
    assert report.cells[0].delta_pct == pytest.approx(25.0)
    assert report.cells[0].ci_pct == pytest.approx([25.0, 25.0])


def test_a_faster_b_and_a_null_switch():
    plan = manifest(rounds=6)
    faster = analyze(plan, outcomes(plan, ratio_plan(lambda k: 0.9 * JITTER[k - 1])))
    assert {c.verdict for c in faster.cells} == {"faster"}
    null = analyze(plan, outcomes(plan, ratio_plan(lambda k: JITTER[k - 1])))
    assert {c.verdict for c in null.cells} == {"same"}


def test_an_interval_across_the_threshold_is_unstable_and_flips_are_counted():
    plan = manifest(rounds=6)
    ratios = [1.03, 0.99, 1.02, 1.04, 1.03, 1.05]
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: ratios[k - 1])))
    cell = report.cells[0]
    assert cell.verdict == "unstable"
    assert cell.sign_flips == 1
    assert report.summary.sign_flip_cells == [c.id for c in report.cells]


def test_order_effect_is_a_first_minus_b_first():
    # Odd rounds run A first: give them +4 %, even rounds +2 %.
    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: 1.04 if k % 2 else 1.02)))
    cell = report.cells[0]
    assert cell.a_first == [True, False, True, False, True, False]
    assert cell.order_effect_pct == pytest.approx(2.0)
    assert math.isnan(order_effect([1.0, 3.0], [True, True]))


def test_within_side_noise_is_the_samples_relative_iqr_not_the_delta_spread():
    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: 1.10 * JITTER[k - 1])))
    cell = report.cells[0]
    # samples_around(m, 0.01): quartiles at -1 and +1 steps of 1 %.
    assert cell.within_side_noise_pct == pytest.approx(2.0)
    assert cell.delta_spread_pct == pytest.approx(110 * (1.004 - 0.997))


def test_fewer_than_six_rounds_reports_the_min_max_and_its_coverage():
    plan = manifest(rounds=4)
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: 1.10 * JITTER[k - 1])))
    cell = report.cells[0]
    assert not cell.ci_reached
    assert cell.ci_coverage == pytest.approx(1 - 2 / 16)
    assert cell.ci_pct == [min(cell.round_deltas_pct), max(cell.round_deltas_pct)]
    assert "87.5%" in report.summary.interval_note
    assert report.summary.expected_false_calls == pytest.approx(4 * 2 ** (1 - 4))


def test_the_aa_floor_raises_the_threshold():
    plan = manifest(rounds=6, aa=True)
    aa_noise = [1.00, 1.03, 0.99, 1.01, 0.98, 1.00]

    def median_of(run: str, variant: str, size: int) -> float:
        k = int(run[1 : run.index("_")])
        base = size * 1e-6
        if run.endswith("_B"):
            return base * 1.02 * JITTER[k - 1]
        if run.endswith("_AA2"):
            return base * aa_noise[k - 1]
        return base

    report = analyze(plan, outcomes(plan, median_of))
    cell = report.cells[0]
    assert cell.aa_deltas_pct == pytest.approx([100 * (r - 1) for r in aa_noise])
    assert cell.aa_floor_pct == pytest.approx(3.0)
    assert cell.threshold_pct == pytest.approx(3.0)
    # Every round's +2% clears the 1% minimum effect, under the 3% floor: not `same`
    # (nor `slower`): the A/B cannot tell it from noise (ADR 0020, 2026-12-03).
    assert cell.verdict == "unstable"
    # Without the control the same deltas clear the 1 % minimum effect.
    plain = manifest(rounds=6)
    assert analyze(plain, outcomes(plain, median_of)).cells[0].verdict == "slower"


def test_min_effect_override():
    plan = manifest(rounds=6)
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: 1.10 * JITTER[k - 1])), 20.0)
    assert report.min_effect_pct == 20.0
    assert {c.verdict for c in report.cells} == {"same"}


def test_a_failed_cell_round_leaves_the_cell_judged_on_its_other_rounds():
    plan = manifest(rounds=6)

    def median_of(run: str, variant: str, size: int) -> float | None:
        if (run, variant, size) == ("r2_B", "slow", 100):
            return None
        return size * 1e-6 * (1.1 if run.endswith("_B") else 1.0)

    report = analyze(plan, outcomes(plan, median_of))
    assert report.failed_variants == {"slow": [2]}
    assert [(f.run, f.log, f.reason) for f in report.failed_runs] == [
        ("r2_B", "r2_B/log.txt", "slow/size=100: failed: RuntimeError: boom"),
    ]
    cells = {c.id: c for c in report.cells}  # every cell keeps what was measured
    assert list(cells) == ["fast/size=100", "fast/size=400", "slow/size=100", "slow/size=400"]
    assert cells["slow/size=100"].failed_rounds == [2]
    assert len(cells["slow/size=100"].round_deltas_pct) == 5
    assert len(cells["slow/size=100"].a_first) == 5
    assert (cells["slow/size=400"].failed_rounds, len(cells["slow/size=400"].a_medians_s)) == (
        [], 6)
    assert {c.verdict for c in report.cells} == {"slower"}
    assert report.summary.cells == 4
    statuses = {run.name: run.status for run in report.runs}
    assert (statuses["r2_B"], statuses["r2_A"]) == ("failed", "ok")


def test_a_cell_left_with_one_round_is_unstable_and_one_with_none_is_left_out():
    plan = manifest(rounds=2)

    def median_of(run: str, variant: str, size: int) -> float | None:
        if variant == "slow" and (size == 400 or run == "r2_A"):
            return None
        return size * 1e-6 * (1.1 if run.endswith("_B") else 1.0)

    report = analyze(plan, outcomes(plan, median_of))
    cells = {c.id: c for c in report.cells}
    assert "slow/size=400" not in cells  # nothing measured: failed_runs alone
    assert cells["slow/size=100"].verdict == "unstable"
    assert cells["slow/size=100"].round_deltas_pct == pytest.approx([10.0])
    assert cells["fast/size=100"].verdict == "slower"
    assert report.failed_variants == {"slow": [1, 2]}
    assert len(report.failed_runs) == 5  # slow/size=400 in 4 runs, slow/size=100 in r2_A


def test_a_crashed_side_fails_every_variant_in_its_round():
    plan = manifest(rounds=6)
    runs = outcomes(plan, ratio_plan(lambda k: 1.1))
    runs["r3_B"] = RunOutcome(None, "exited with code -9 and wrote no results.json")
    del runs["r5_A"]
    report = analyze(plan, runs)
    assert report.failed_variants == {"fast": [3, 5], "slow": [3, 5]}
    assert [(c.failed_rounds, c.verdict) for c in report.cells] == [([3, 5], "slower")] * 4
    assert report.summary.verdicts == {"faster": 0, "slower": 4, "same": 0, "unstable": 0}
    assert report.summary.expected_false_calls == pytest.approx(
        4 * (1 - report.cells[0].ci_coverage))
    assert any("code -9" in f.reason for f in report.failed_runs)


def test_run_metadata_keeps_order_and_positions():
    plan = manifest(rounds=3, aa=True)
    report = analyze(plan, outcomes(plan, ratio_plan(lambda k: 1.1)))
    a_first, b_first = ["A", "B", "AA1", "AA2"], ["B", "A", "AA1", "AA2"]
    assert report.order == [a_first, b_first, a_first]
    assert [r.position for r in report.runs] == list(range(1, 13))
    assert [r.pins_mode for r in report.runs].count("auto") == 1


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (1.5, 3.0, "slower"),
        (-3.0, -1.5, "faster"),
        (-1.0, 1.0, "same"),
        (-0.5, 1.5, "unstable"),
        (-1.5, -0.5, "unstable"),
        (1.0, 2.0, "unstable"),  # touching the edge is not beyond it
    ],
)
def test_verdict_rules(low, high, expected):
    assert verdict(low, high, 1.0) == expected


@pytest.mark.parametrize(
    ("delta", "aa_p", "expected"),
    [
        (0.5, 0.6, "same"),  # deltas where the A/A's are, median inside: same
        (0.5, 0.01, "unstable"),  # deltas that stand out from the A/A's
        (1.2, 0.6, "unstable"),  # median beyond the threshold
        (0.5, None, "unstable"),  # no A/A control: the interval alone decides
    ],
)
def test_an_interval_across_the_edge_is_same_when_it_looks_like_the_aa(delta, aa_p, expected):
    assert verdict(-0.5, 1.5, 1.0, delta, aa_p) == expected


@pytest.mark.parametrize(
    ("low", "high", "delta", "aa_p", "expected"),
    [
        # the audited CPU A/B: +15% of extra work, a noisy A/A round raising the threshold
        # to 24.4%: every value the interval allows is beyond the 1% minimum effect
        (2.09, 18.64, 9.36, 0.03, "unstable"),
        (-18.0, -2.0, -9.0, 0.6, "unstable"),  # the same faster, looking like the A/A
        (-0.5, 18.64, 9.36, 0.6, "same"),  # an interval reaching no effect: the A/A decides
        (-0.8, 0.9, 0.1, 0.03, "same"),  # within the minimum effect itself
    ],
)
def test_an_interval_beyond_the_minimum_effect_is_never_same_under_a_raised_threshold(
    low, high, delta, aa_p, expected,
):
    assert verdict(low, high, 24.44, delta, aa_p, rounds=6, min_effect_pct=1.0) == expected


def test_aa_p_value_separates_a_shift_from_noise():
    aa = [-4.7, 7.1, -2.2, -4.6, 0.7, -2.9]
    assert aa_p_value([1.1, 3.5, -5.0, 2.9, -4.1, -7.0], aa) > 0.5
    assert aa_p_value([8.0, 9.5, 10.1, 8.8, 12.0, 9.1], aa) < AA_ALPHA  # B above every round
    assert aa_p_value([0.0] * 6, [0.0] * 6) == 1.0


def test_aa_min_rounds_is_the_fewest_at_which_the_signed_rank_test_can_reject():
    from scipy.stats import wilcoxon

    def smallest_p(rounds: int) -> float:  # every difference on one side, all distinct
        return float(wilcoxon([float(k + 1) for k in range(rounds)]).pvalue)

    assert smallest_p(AA_MIN_ROUNDS - 1) >= AA_ALPHA > smallest_p(AA_MIN_ROUNDS)


def test_aa_p_value_is_not_asked_where_it_cannot_decide():
    # Below six rounds no outcome reaches 5%; a delta that is not a number decides nothing.
    assert aa_p_value([8.0, 9.5, 10.1, 8.8, 12.0], [0.1, -0.2, 0.3, 0.0, 0.2]) is None
    assert aa_p_value([0.5, math.nan, 3.0, 1, 2, 3], [0.1, -0.2, 0.3, 0, 1, 2]) is None
    assert verdict(-0.5, 1.5, 1.0, 0.5, None) == "unstable"


def null_and_shifted_verdicts(effect: float, trials: int = 300) -> list[str]:
    """Verdicts of simulated 6-round A/Bs with an A/A control: each side's round median
    is noisy (sd 1), B shifted by `effect`; per round d = B - A and a = A' - A."""
    from kernbench.analyze.stats import CONFIDENCE, median_interval

    rng = np.random.default_rng(7)
    found = []
    for _ in range(trials):
        a, b, a2 = rng.normal(size=(3, 6))
        d, aa = list(b + effect - a), list(a2 - a)
        interval = median_interval(d, CONFIDENCE)
        threshold = max(0.1, aa_floor(aa))
        found.append(
            verdict(interval.low, interval.high, threshold, float(np.median(d)), aa_p_value(d, aa))
        )
    return found


def test_a_switch_that_does_nothing_is_called_same_nearly_always():
    # The interval alone against the A/A floor calls it same in about half the A/Bs.
    verdicts = null_and_shifted_verdicts(0.0)
    assert verdicts.count("same") / len(verdicts) >= 0.9
    assert verdicts.count("faster") + verdicts.count("slower") <= 3


def test_a_shift_well_beyond_the_noise_is_not_called_same():
    verdicts = null_and_shifted_verdicts(4.0)
    assert verdicts.count("same") / len(verdicts) <= 0.05


def test_aa_floor_is_the_largest_absolute_delta():
    assert aa_floor([0.5, -2.5, 1.0]) == 2.5
    assert math.isclose(aa_floor([0.1]), 0.1)


def test_each_run_counts_what_it_did_with_pins():
    # Round 1's A records (kernbench's pin and a Triton tuner's); every other run replays.
    plan = manifest(rounds=2, aa=True)
    found = outcomes(plan, ratio_plan(lambda k: 1.0))
    for run in plan.runs:
        results = found[run.name].results
        assert results is not None
        action = "recorded" if run.pins_mode == "auto" else "replayed"
        first = results.cells[0].rounds[0]
        first.pin_action = action
        first.extra["autotune_pins"] = {"triton:mm|H200|k1": action, "triton:mm|H200|k2": action}
    report = analyze(plan, found)
    pins = {run.name: run.pins for run in report.runs}
    assert pins["r1_A"] == {"recorded": 3}
    assert {name: p for name, p in pins.items() if name != "r1_A"} == {
        name: {"replayed": 3} for name in pins if name != "r1_A"
    }
