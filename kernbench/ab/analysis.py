"""Per-cell A/B statistics and verdicts from the results of every side run.

Pure: the inputs are the plan (`AbManifest`) and each run's loaded `Results` (or why
there are none); the output is the `AbReport` that `ab.json` serializes (its models are
in kernbench/results/ab.py). The method is in docs/adr/0020-ab-method.md. Everything is
computed on per-round paired log ratios d = log(B/A); percentages are
100*(exp(d) - 1), so positive means B is slower.
Order statistics commute with that monotone map, so intervals are exact in either.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kernbench.ab.failures import Measured, RunOutcome, find_failures, measured
from kernbench.ab.interleave import cell_pairs, order_split, round_delta
from kernbench.ab.measured_on import measured_on
from kernbench.ab.pairing import as_pair
from kernbench.ab.schedule import AbManifest, SideRun, aa_sides
from kernbench.ab.slots import start_slots, without_slots
from kernbench.ab.verdicts import (
    aa_floor,
    aa_p_value,
    geomean_ratio,
    order_effect,
    rel_iqr_pct,
    sign_flips,
    to_pct,
    verdict,
)
from kernbench.analyze.stats import CONFIDENCE, median_interval, pair_coverage
from kernbench.results.ab import (
    VERDICTS,
    AbCell,
    AbReport,
    AbSummary,
    CellTurns,
    RoundTurns,
    RunRecord,
    TurnsSummary,
)
from kernbench.results.model import CellResult
from kernbench.spec.ab_model import GATE_MIN_ROUNDS, MIN_ROUNDS
from kernbench.units import counted


def analyze(
    manifest: AbManifest,
    outcomes: Mapping[str, RunOutcome],
    min_effect: float | None = None,
    turns: Mapping[int, RoundTurns] | None = None,
) -> AbReport:
    """The A/B report of a finished (or partly failed) set of runs.

    `outcomes` maps each run name (r<k>_<side>) to what it left; a name missing from it
    counts as a run that left nothing. `min_effect` overrides the manifest's. `turns`:
    an interleaved A/B's turns by round (its round deltas come from paired turns)."""
    turns = turns or {}
    min_effect = manifest.min_effect if min_effect is None else min_effect
    tables = {run.name: _cells_by_id(manifest, outcomes.get(run.name)) for run in manifest.runs}
    order_of_cells = _cell_order(manifest, outcomes)
    variants = list(manifest.variants)
    for cell in order_of_cells.values():
        if cell.variant not in variants:
            variants.append(cell.variant)

    failures = find_failures(manifest, outcomes, tables, order_of_cells, variants, turns)
    slots = start_slots(manifest.runs)
    judged = {cell_id: failures.judged_rounds(manifest, cell_id) for cell_id in order_of_cells}
    cells = [
        _cell_report(manifest, tables, cell, min_effect, turns, slots, judged[cell_id])
        for cell_id, cell in order_of_cells.items()
        if judged[cell_id]
    ]
    runs = [
        RunRecord(**run.model_dump(), status=failures.statuses[run.name],
                  pins=_pin_actions(tables[run.name]))
        for run in manifest.runs
    ]
    if manifest.max_rounds:
        needed = rounds_needed(manifest, outcomes, min_effect, turns, cells)
        cells = [c.model_copy(update={"rounds_needed": needed.get(c.id)}) for c in cells]
    return AbReport(
        schedule=manifest.schedule,
        max_rounds=manifest.max_rounds,
        bench=manifest.bench,
        device=manifest.device,
        switch=manifest.switch,
        switch_note=manifest.switch_note,
        only=list(manifest.only),
        a=manifest.a,
        b=manifest.b,
        rounds=manifest.rounds,
        aa=manifest.aa,
        min_effect_pct=min_effect,
        created_utc=manifest.created_utc,
        order=_order(manifest),
        runs=runs,
        cells=cells,
        failed_variants=failures.variants(),
        failed_runs=failures.runs,
        summary=summarize(cells, manifest.rounds,
                          [cell_id for cell_id, rounds in judged.items() if not rounds]),
        measured_on=measured_on(manifest, outcomes),
    )


def rounds_needed(
    manifest: AbManifest,
    outcomes: Mapping[str, RunOutcome],
    min_effect: float,
    turns: Mapping[int, RoundTurns],
    cells: Sequence[AbCell],
) -> dict[str, int]:
    """Per decided cell, the round from which on its verdict was the final one: the
    report of the first r rounds, for r down from the last, while it agrees; never below
    GATE_MIN_ROUNDS, whose interval reaches 95 %: a verdict that an interval of 50 % coverage
    (2 rounds) happened to give is not one those rounds could be trusted for (ADR 0020)."""
    final = {c.id: c.verdict for c in cells if c.verdict != "unstable"}
    needed = {cell_id: manifest.rounds for cell_id in final}
    for r in range(manifest.rounds - 1, GATE_MIN_ROUNDS - 1, -1):
        first = manifest.model_copy(update={
            "rounds": r, "max_rounds": None,
            "runs": [run for run in manifest.runs if run.round <= r],
        })
        verdicts = {c.id: c.verdict for c in analyze(first, outcomes, min_effect, turns).cells}
        agreeing = [i for i in final if needed[i] == r + 1 and verdicts.get(i) == final[i]]
        if not agreeing:
            break
        for cell_id in agreeing:
            needed[cell_id] = r
    return needed


def _turn_ratios(
    rounds: Sequence[int], turns: Mapping[int, RoundTurns], cell_id: str, side: str
) -> tuple[list[float], list[CellTurns], float]:
    """Per round of `rounds`, the median paired delta log(side/A); the turn records; and
    the order effect (pooled paired deltas of A-first blocks minus side-first blocks,
    percent)."""
    logs: list[float] = []
    records: list[CellTurns] = []
    a_first: list[float] = []
    side_first: list[float] = []
    for k in rounds:
        record = turns[k].cells[cell_id]
        logs.append(round_delta(cell_pairs(record, side)))
        records.append(record)
        one, two = order_split(record, side)
        a_first += one
        side_first += two
    effect = (to_pct(float(np.median(a_first))) - to_pct(float(np.median(side_first)))
              if a_first and side_first else float("nan"))
    return logs, records, effect


def _pin_actions(table: Mapping[str, CellResult]) -> dict[str, int]:
    """How often the run recorded or replayed a pin, kernbench's and its tuners'."""
    actions: Counter[str] = Counter()
    for cell in table.values():
        for result in cell.rounds:
            if result.pin_action:
                actions[result.pin_action] += 1
            actions.update(result.extra.get("autotune_pins", {}).values())
    return dict(sorted(actions.items()))


def _cells_by_id(manifest: AbManifest, outcome: RunOutcome | None) -> dict[str, CellResult]:
    """A run's cells by their id in the A/B (an A/B of the variant: their pair's)."""
    if outcome is None or outcome.results is None:
        return {}
    cells = (as_pair(cell, manifest.switch, manifest.a, manifest.b)
             for cell in outcome.results.cells)
    return {cell.id: cell for cell in cells}


def _cell_order(manifest: AbManifest, outcomes: Mapping[str, RunOutcome]) -> dict[str, CellResult]:
    """Every cell any run reported, in plan order (schedule order breaks ties)."""
    found: dict[str, CellResult] = {}
    for run in manifest.runs:
        for cell in sorted(_cells_by_id(manifest, outcomes.get(run.name)).values(),
                           key=lambda c: c.index):
            found.setdefault(cell.id, cell)
    return found


def _order(manifest: AbManifest) -> list[list[str]]:
    rounds: dict[int, list[SideRun]] = {}
    for run in manifest.runs:
        rounds.setdefault(run.round, []).append(run)
    return [
        [run.side for run in sorted(rounds[k], key=lambda r: r.position)] for k in sorted(rounds)
    ]


def _log_ratios(
    manifest: AbManifest,
    tables: Mapping[str, Mapping[str, CellResult]],
    cell_id: str,
    sides: tuple[Any, Any],
    rounds: Sequence[int],
) -> tuple[list[float], list[Measured], list[Measured], list[bool]]:
    ratios: list[float] = []
    firsts: list[Measured] = []
    seconds: list[Measured] = []
    a_first: list[bool] = []
    for k in rounds:
        pair = manifest.pair(k, sides)
        assert pair is not None, f"round {k} has no {sides} pair"
        one = measured(tables[pair[0].name].get(cell_id))
        two = measured(tables[pair[1].name].get(cell_id))
        assert isinstance(one, Measured) and isinstance(two, Measured), "failed rounds are out"
        ratios.append(math.log(two.median_s / one.median_s))
        firsts.append(one)
        seconds.append(two)
        a_first.append(pair[0].position < pair[1].position)
    return ratios, firsts, seconds, a_first


def _cell_report(
    manifest: AbManifest,
    tables: Mapping[str, Mapping[str, CellResult]],
    cell: CellResult,
    min_effect: float,
    turns: Mapping[int, RoundTurns],
    slots: Sequence[Mapping[str, int]],
    rounds: Sequence[int],
) -> AbCell:
    """`slots`: per round, each side's start slot (`slots.start_slots`); `rounds`: those
    the cell is judged on, in which every side measured it."""
    logs, a_sides, b_sides, a_first = _log_ratios(manifest, tables, cell.id, ("A", "B"),
                                                  rounds)
    records: list[CellTurns] | None = None
    aa_logs: list[float] | None = None
    slot_effects: list[float] | None = None
    interleaved = manifest.schedule == "interleaved"
    if interleaved:
        logs, records, order = _turn_ratios(rounds, turns, cell.id, "B")
        by_side = {"B": logs}
        if manifest.aa:
            by_side["AA1"] = _turn_ratios(rounds, turns, cell.id, "AA1")[0]
        fit = without_slots(by_side, [slots[k - 1] for k in rounds])
        logs, aa_logs = fit.deltas["B"], fit.deltas.get("AA1")
        slot_effects = None if fit.effects is None else [to_pct(e) for e in fit.effects]
    elif manifest.aa:
        aa_logs = _log_ratios(manifest, tables, cell.id, aa_sides(manifest.schedule),
                              rounds)[0]
    median_log = float(np.median(logs))
    interval = median_interval(logs, CONFIDENCE)
    deltas = [to_pct(d) for d in logs]
    low, high = to_pct(interval.low), to_pct(interval.high)

    aa_deltas: list[float] | None = None
    floor: float | None = None
    if aa_logs is not None:
        aa_deltas = [to_pct(d) for d in aa_logs]
        floor = aa_floor(aa_deltas)
    threshold = max(min_effect, floor if floor is not None else 0.0)
    aa_p = aa_p_value(deltas, aa_deltas) if aa_deltas else None
    delta = to_pct(median_log)
    noise = [rel_iqr_pct(side.samples_s) for side in a_sides + b_sides]
    return AbCell(
        id=cell.id,
        variant=cell.variant,
        axes=cell.axes,
        params=cell.params,
        verdict=verdict(low, high, threshold, delta, aa_p, rounds=len(logs),
                        min_effect_pct=min_effect),
        delta_pct=delta,
        ci_pct=[low, high],
        ci_coverage=interval.coverage,
        ci_reached=interval.reached,
        round_deltas_pct=deltas,
        a_medians_s=[side.median_s for side in a_sides],
        b_medians_s=[side.median_s for side in b_sides],
        a_first=a_first,
        sign_flips=sign_flips(logs, median_log),
        within_side_noise_pct=float(np.median(noise)),
        delta_spread_pct=max(deltas) - min(deltas),
        order_effect_pct=order if interleaved else order_effect(deltas, a_first),
        slot_effects_pct=slot_effects,
        aa_deltas_pct=aa_deltas,
        aa_floor_pct=floor,
        aa_p=aa_p,
        threshold_pct=threshold,
        turns=None if records is None else [TurnsSummary.of(r) for r in records],
        timers=_mixed_timers(manifest, tables, cell.id),
        failed_rounds=[k for k in range(1, manifest.rounds + 1) if k not in rounds],
    )


def _mixed_timers(
    manifest: AbManifest, tables: Mapping[str, Mapping[str, CellResult]], cell_id: str
) -> dict[str, int]:
    """How many of the cell's runs each timer timed, where they were not all one."""
    timers = Counter(side.timer for run in manifest.runs if isinstance(
        side := measured(tables[run.name].get(cell_id)), Measured) and side.timer)
    return dict(timers) if len(timers) > 1 else {}


def summarize(cells: Sequence[AbCell], rounds: int, unjudged: Sequence[str] = ()) -> AbSummary:
    """`unjudged`: the cells some run measured but no round measured on every side."""
    counts = {name: sum(1 for c in cells if c.verdict == name) for name in VERDICTS}
    by_variant: dict[str, list[float]] = {}
    for cell in cells:
        by_variant.setdefault(cell.variant, []).append(cell.delta_pct)
    ratios = {v: geomean_ratio(deltas) for v, deltas in by_variant.items()}
    interval = median_interval([0.0] * max(rounds, 1), CONFIDENCE)
    whole = [c for c in cells if not c.failed_rounds]
    # A cell judged on fewer rounds has its own, lower coverage; one of a round, none.
    fewer = [c for c in cells if c.failed_rounds and len(c.round_deltas_pct) >= MIN_ROUNDS]
    false_calls = (len(whole) * (1 - pair_coverage(rounds, interval.rank))
                   + sum(1 - c.ci_coverage for c in fewer))
    note = None
    if rounds < MIN_ROUNDS:  # no cell is called faster or slower
        false_calls = 0.0
        note = (f"with {counted(rounds, 'round')} every cell is unstable: a verdict needs "
                f"{MIN_ROUNDS}")
    elif not interval.reached:
        note = (
            f"with {rounds} rounds no order-statistic pair covers the median with "
            f"{CONFIDENCE:.0%}; each interval is the min-max, coverage {interval.coverage:.1%}"
        )
    return AbSummary(
        cells=len(cells),
        verdicts=counts,
        geomean_ratio=ratios,
        geomean_delta_pct={v: 100 * (r - 1) for v, r in ratios.items()},
        sign_flip_cells=[c.id for c in cells if c.sign_flips],
        expected_false_calls=false_calls,
        interval_note=note,
        unjudged_cells=list(unjudged),
    )
