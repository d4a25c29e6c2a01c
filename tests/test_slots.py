"""The start-slot effect of interleaved rounds (kernbench/ab/slots.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kernbench.ab.schedule import interleaved_schedule
from kernbench.ab.slots import MIN_DF, start_slots, without_slots
from kernbench.ab.verdicts import aa_floor, aa_p_value, to_pct, verdict
from kernbench.analyze.stats import CONFIDENCE, median_interval
from kernbench.render.ab_report import render_markdown
from kernbench.results.ab import AB_FORMAT
from kernbench.results.jsonio import read_json


def _slots(rounds: int, aa: bool = True) -> list[dict[str, int]]:
    return start_slots(interleaved_schedule(rounds, "1", "0", aa))


def _measured(
    slots: list[dict[str, int]], effect: float, slot_effect: list[float], noise: float,
    seed: int = 0,
) -> dict[str, list[float]]:
    """Round deltas log(side/A) of processes whose start slot adds `slot_effect`."""
    rng = np.random.default_rng(seed)
    deltas: dict[str, list[float]] = {"B": [], "AA1": []}
    for slot in slots:
        for side, true in (("B", effect), ("AA1", 0.0)):
            offset = slot_effect[slot[side]] - slot_effect[slot["A"]]
            deltas[side].append(true + offset + float(rng.normal(0, noise)))
    return deltas


def test_the_rotation_puts_every_side_in_every_slot_alike() -> None:
    slots = _slots(6)
    assert slots[0] == {"A": 0, "B": 1, "AA1": 2}  # round 1's A records the pins first
    for side in ("A", "B", "AA1"):
        assert sorted(s[side] for s in slots) == [0, 0, 1, 1, 2, 2]


def test_a_slot_offset_is_taken_out_of_the_round_deltas() -> None:
    # The second process started runs 2% faster, as a 29 us GEMM did on H200s.
    slots = _slots(6)
    slot_effect = [0.0, math.log(0.98), 0.0]
    measured = _measured(slots, math.log(1.05), slot_effect, noise=0.001)
    fit = without_slots(measured, slots)
    assert fit.effects is not None
    assert fit.effects[1] == pytest.approx(math.log(0.98), abs=0.002)
    assert fit.effects[2] == pytest.approx(0.0, abs=0.002)
    # as measured, the rounds spread by the slots (4 points) and A/A by 2%; without them,
    # by the noise alone, scaled up for what the fit used
    spread = max(measured["B"]) - min(measured["B"])
    assert spread > 0.035
    assert max(fit.deltas["B"]) - min(fit.deltas["B"]) < 0.01
    assert aa_floor([to_pct(d) for d in measured["AA1"]]) > 1.9
    assert aa_floor([to_pct(d) for d in fit.deltas["AA1"]]) < 0.5
    interval = median_interval(fit.deltas["B"], 0.95)
    assert interval.low < math.log(1.05) < interval.high


def test_without_a_slot_effect_the_fit_leaves_the_scatter_as_it_was() -> None:
    # The fit takes k = 3 of the n = 12 deltas' degrees of freedom; widening what is left
    # by sqrt(n / (n - k)) gives back the noise's variance on average (without it: 0.75).
    slots = _slots(6)
    fitted = measured = 0.0
    for seed in range(400):
        deltas = _measured(slots, 0.0, [0.0, 0.0, 0.0], noise=0.002, seed=seed)
        fit = without_slots(deltas, slots)
        assert fit.effects is not None and max(map(abs, fit.effects)) < 0.005
        for side in ("B", "AA1"):
            fitted += float(np.var(fit.deltas[side]))
            measured += float(np.var(deltas[side]))
    assert 0.9 < fitted / measured < 1.2


def test_two_sides_fit_the_start_order_alone() -> None:
    slots = _slots(6, aa=False)
    assert [s["A"] for s in slots] == [0, 1, 0, 1, 0, 1]
    measured = {"B": [0.05 + (0.01 if s["B"] == 1 else -0.01) for s in slots]}
    fit = without_slots(measured, slots)
    assert fit.effects is not None
    assert fit.deltas["B"] == pytest.approx([0.05] * 6)


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_rounds_that_cannot_tell_slots_from_effects_stay_as_measured(rounds: int) -> None:
    slots = _slots(rounds)
    measured = _measured(slots, 0.01, [0.0, -0.02, 0.0], noise=0.001)
    fit = without_slots(measured, slots)
    n, k = 2 * rounds, 3
    if n - k < MIN_DF:
        assert fit.effects is None and fit.deltas == measured
    else:
        assert fit.effects is not None


def test_a_delta_that_is_not_finite_leaves_the_deltas_as_measured() -> None:
    slots = _slots(6)
    measured = _measured(slots, 0.0, [0.0, 0.0, 0.0], noise=0.001)
    measured["B"][2] = float("nan")
    fit = without_slots(measured, slots)
    assert fit.effects is None


def _verdicts(effect: float, slot_sd: float, fit: bool = True, trials: int = 300) -> list[str]:
    """Verdicts of simulated 6-round interleaved A/Bs with an A/A control, whose processes
    each carry their start slot's offset (sd `slot_sd`, drawn per A/B) and noise (sd 1);
    B shifted by `effect`. Values in percent; with `fit`, the deltas go through
    `without_slots`, else they are judged as measured."""
    rng = np.random.default_rng(11)
    slots = _slots(6)
    found: list[str] = []
    for _ in range(trials):
        slot_effect = [0.0, *rng.normal(0, slot_sd, size=2)]
        noise = rng.normal(size=(6, 3))
        deltas: dict[str, list[float]] = {"B": [], "AA1": []}
        for r, slot in enumerate(slots):
            a, b, a2 = (slot_effect[slot[side]] + noise[r, i]
                        for i, side in enumerate(("A", "B", "AA1")))
            deltas["B"].append(b + effect - a)
            deltas["AA1"].append(a2 - a)
        if fit:
            deltas = without_slots(deltas, slots).deltas
        d, aa = deltas["B"], deltas["AA1"]
        interval = median_interval(d, CONFIDENCE)
        threshold = max(0.1, aa_floor(aa))
        found.append(verdict(interval.low, interval.high, threshold, float(np.median(d)),
                             aa_p_value(d, aa)))
    return found


@pytest.mark.parametrize("slot_sd", [0.0, 3.0])
def test_a_switch_that_does_nothing_is_still_called_same_nearly_always(slot_sd: float) -> None:
    # The fit takes three parameters out of twelve deltas: the scatter it leaves is widened
    # for that, so the A/A floor and the interval keep the false calls as rare as before.
    verdicts = _verdicts(0.0, slot_sd)
    assert verdicts.count("same") / len(verdicts) >= 0.9
    assert verdicts.count("faster") + verdicts.count("slower") <= 6


def test_with_slot_offsets_a_shift_the_measured_deltas_would_hide_is_called() -> None:
    # Offsets of sd 3 hide a shift of 6 in the deltas as measured (about one A/B in five
    # calls it); without them it is called as often as where no offsets were (93%).
    def called(verdicts: list[str]) -> float:
        return verdicts.count("slower") / len(verdicts)

    assert called(_verdicts(6.0, 3.0, fit=False)) < 0.4
    assert called(_verdicts(6.0, 3.0)) >= 0.85
    assert called(_verdicts(6.0, 0.0, fit=False)) >= 0.85


def test_the_committed_29_us_cells_lose_their_start_slot_offset() -> None:
    # Run 5 of the known-effect A/B on an H200 (docs/ab-schedules.md, "Start slots").
    folder = Path(__file__).resolve().parent.parent / "benches/data/ab-schedules-h200"
    report = AB_FORMAT.read(folder / "known-interleaved-5ms-run5" / "ab.json")
    small = [c for c in report.cells if "384x384x384" in c.id]
    assert len(small) == 4
    for cell in small:
        assert cell.slot_effects_pct is not None and cell.slot_effects_pct[1] < -1.0
        assert cell.aa_floor_pct is not None and cell.aa_floor_pct < 1.2
    text = render_markdown(report, None)
    assert "| start slots |" in text and "-2.07 / -0.42 %" in text


def test_a_version_2_report_reads_as_measured_with_its_turns_summarized(tmp_path: Path) -> None:
    folder = Path(__file__).resolve().parent.parent / "benches/data/ab-tf32-h200-interleaved"
    data = json.loads((folder / "ab.json").read_text())
    turns = read_json(folder / "r1_turns.json.xz")["cells"]
    data["schema_version"] = 2
    for cell in data["cells"]:
        cell.pop("slot_effects_pct")
        cell["turns"] = [turns[cell["id"]]]  # version 2 copied every turn into ab.json
    (tmp_path / "ab.json").write_text(json.dumps(data))
    report = AB_FORMAT.read(tmp_path / "ab.json")
    assert all(c.slot_effects_pct is None for c in report.cells)
    first = report.cells[0].turns
    assert first is not None and first[0].turns_per_side == turns[report.cells[0].id][
        "turns_per_side"]
