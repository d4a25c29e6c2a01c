"""The A/B report (`ab.json`): its models and its format.

`kernbench.ab.analysis` computes it; `kernbench.render` draws it. The fields are
described in docs/adr/0021-ab-json-format.md.

Format history (bump AB_VERSION and add a step to AB_FORMAT's `update_to`):
  1: first format.
  2: `schedule` (sequential or interleaved); an interleaved cell keeps every turn
     (`turns`, one record a round). Version 1 files were all sequential.
  3: `slot_effects_pct`: an interleaved cell's round deltas are without the effect of
     each side's start slot (ab/slots.py). Version 2 files kept them as measured, which
     their `slot_effects_pct` of None says. A cell's `turns` keep each round's turn size,
     timer and reason; the turns themselves are in `r<k>_turns.json` alone (version 2
     copied them there too).
  4: a cell with a failed run is kept, judged without the rounds it failed in
     (`failed_rounds`); version 3 left every cell of its variant out, so its cells have
     none.
  5: `a`, `b` and a run's `value` may be null: the side leaves the switch unset (ADR 0020,
     a side without the switch); versions 1 to 4 set it on both sides.
  6: `measured_on`: the machine and code the side runs measured on, from their results'
     provenance, and where they differ; versions 1 to 5 kept none (null: not recorded).

`r<k>_turns.json` (TURNS_FORMAT, version 1) is what the parent of an interleaved round
saw: each cell's turns in the order taken, each turn's median.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernbench.results.jsonio import FileFormat, unchanged
from kernbench.spec.ab_model import MIN_ROUNDS, AbSchedule

AB_VERSION = 6
TURNS_VERSION = 1
Verdict = Literal["faster", "slower", "same", "unstable"]
VERDICTS: tuple[Verdict, ...] = ("faster", "slower", "same", "unstable")
# A verdict needs each side's spread: with one round on a side (or one paired delta) the
# interval is a single point, coverage 0, and calling it faster, slower or same would
# rest on no evidence, so such a cell is `unstable`: the A/B's fewest rounds, MIN_ROUNDS.
# A cell's deltas count as "where the A/A deltas are" unless a two-sided test rejects that
# at this level: so a switch that does nothing is called `same` about 95% of the time.
AA_ALPHA = 0.05
# The signed-rank test's smallest two-sided p with n pairs is 2/2^n: with fewer rounds than
# this it cannot reject at AA_ALPHA, so it is not asked (the interval alone decides);
# tests/test_ab_analysis.py checks the two against each other.
AA_MIN_ROUNDS = 6
# What each verdict means (ab/verdicts.verdict decides it): the one text `ab --help`,
# compare.md and the A/B's reports all say (ADR 0020).
VERDICT_MEANINGS = (
    "slower (faster): the cell's whole interval lies above +threshold (below −threshold); "
    "same: it lies within ±threshold, which rules out an effect beyond the threshold, not "
    "every effect; unstable: neither, or a side of fewer than "
    f"{MIN_ROUNDS} rounds: these rounds cannot tell."
)
AA_VERDICT_MEANINGS = (
    "With the A/A control the threshold is the larger of the minimum effect and the cell's "
    "A/A floor; a cell whose delta lies within ±threshold is same also when its A/A p is "
    f"{AA_ALPHA:g} or more, and no cell is same whose whole interval lies beyond the minimum "
    "effect (an effect too small to tell from the floor: unstable)."
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CellTurns(_Model):
    """One cell's turns in one interleaved round, in the order they were taken."""

    calls_per_turn: int = 0
    turns_per_side: int = 0
    sides: list[str] = []  # the side of each turn; block i holds the next len(live) turns
    medians_s: list[float] = []  # each turn's median, same order
    blocks: list[int] = []  # each turn's block
    spans_s: list[list[float]] = []  # each turn's [start, end], seconds into the round
    reason: str | None = None  # why the cell has no (or fewer) turns
    # The timer every side timed the cell with: the first side to prepare it in the A/B
    # chose it (timer.kind, or auto's choice) and every later side and round was given it.
    timer: str | None = None


class TurnsSummary(_Model):
    """A cell's turns in one interleaved round as ab.json keeps them: their size, timer and
    why there were none or fewer; each turn's median stays in `r<k>_turns.json`."""

    calls_per_turn: int = 0
    turns_per_side: int = 0
    reason: str | None = None
    timer: str | None = None

    @classmethod
    def of(cls, turns: CellTurns) -> TurnsSummary:
        return cls(**turns.model_dump(include=set(cls.model_fields)))


class RoundTurns(_Model):
    schema_version: int = TURNS_VERSION
    round: int
    runs: dict[str, str]  # side -> the run folder it measured into (r<k>_<side>)
    cells: dict[str, CellTurns]  # by cell id


class AbCell(_Model):
    id: str
    variant: str
    axes: dict[str, Any]
    params: dict[str, Any]
    verdict: Verdict
    delta_pct: float  # median over rounds of the paired delta
    ci_pct: list[float]  # [lo, hi], order statistics of the per-round deltas
    ci_coverage: float
    ci_reached: bool  # False: fewer rounds than 95% needs; ci_pct is the min-max
    round_deltas_pct: list[float]
    a_medians_s: list[float]
    b_medians_s: list[float]
    a_first: list[bool]  # per round: did A run before B
    sign_flips: int  # rounds whose delta has the opposite sign of the median
    within_side_noise_pct: float  # median relative IQR of one side's samples
    delta_spread_pct: float  # max - min of the per-round deltas
    order_effect_pct: float  # mean delta of A-first rounds minus B-first rounds
    # Interleaved: per start slot, how much slower that slot's process ran than the first
    # started, fitted over the rounds; round_deltas_pct and aa_deltas_pct are without it
    # (ab/slots.py). None: sequential, or rounds that cannot tell slots from effects.
    slot_effects_pct: list[float] | None = None
    aa_deltas_pct: list[float] | None = None
    aa_floor_pct: float | None = None  # max |A/A delta|
    # Two-sided signed-rank p of each round's delta minus its A/A delta: at 0.05 or more
    # (and the median delta within the threshold) the cell is `same` though its interval
    # crosses the threshold (ab/verdicts.py).
    aa_p: float | None = None
    threshold_pct: float
    turns: list[TurnsSummary] | None = None  # interleaved: each round's turns, summarized
    rounds_needed: int | None = None  # rounds auto: from which round on the verdict held
    # Where the cell's runs (every side, every round) did not all use one timer: how many
    # each timer timed; those deltas compare unlike samples (a graph's against events').
    timers: dict[str, int] = {}
    # The report's rounds left out of this cell's numbers because one of its runs failed
    # in them (failed_runs says why): the cell is judged on the others, `unstable` when
    # fewer than two are left.
    failed_rounds: list[int] = []


class FailedRun(_Model):
    variant: str
    round: int
    run: str
    log: str  # relative to the A/B folder
    reason: str


class RunRecord(_Model):
    name: str
    round: int
    side: str
    value: str | None  # None: the switch unset
    position: int
    slot: int
    pins_mode: str
    status: Literal["ok", "failed", "crashed"]
    # What the run did with pins, counted over its cells: kernbench's own (`pin_action`)
    # and every Triton tuner's (`autotune_pins`): recorded / replayed / stale-retuned.
    pins: dict[str, int] = Field(default_factory=dict)


class AbSummary(_Model):
    cells: int
    verdicts: dict[str, int]
    geomean_ratio: dict[str, float]  # per variant, B/A over its cells' median deltas
    geomean_delta_pct: dict[str, float]
    sign_flip_cells: list[str]
    expected_false_calls: float  # cells * (1 - coverage): calls to expect with no effect
    interval_note: str | None = None
    # Cells left out of `cells`: a run measured them, but in no round did every side (each
    # failed in every round; failed_runs says why). Optional: older files have none.
    unjudged_cells: list[str] = []


class RunsWithValue(_Model):
    value: str | bool | None  # None: those runs did not record it
    runs: list[str]


class MeasuredOn(_Model):
    """Where and with what the side runs measured, read from their results' provenance.

    A fact is None where no run recorded it, and also where the runs did not all record
    the same value: `differing` then lists each value with its runs, in run order (an A/B
    across two GPUs, drivers or commits compares the machines or the code too)."""

    device_name: str | None = None  # the GPU's model; the CPU's on a CPU A/B
    gpu_uuid: str | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    triton: str | None = None
    kernbench: str | None = None  # its version
    commit: str | None = None
    dirty: bool | None = None  # tracked files differed from the commit
    host: str | None = None
    runs: list[str] = []  # the runs it was read from: those that left results
    differing: dict[str, list[RunsWithValue]] = {}


MEASURED_FACTS = tuple(name for name in MeasuredOn.model_fields
                       if name not in ("runs", "differing"))


class AbReport(_Model):
    schema_version: int = AB_VERSION
    schedule: AbSchedule = "sequential"
    max_rounds: int | None = None  # rounds auto: the most it would have run
    bench: str
    device: str
    switch: str
    a: str | None  # None: side A leaves the switch unset (`side_setting`)
    b: str | None
    rounds: int
    # An A/B interrupted mid-way is judged on the rounds every side finished: the rounds
    # it was asked for, when more than `rounds`.
    planned_rounds: int | None = None
    # The switch check's warning or note, made before the A/B ran (ab-run.json's): a
    # switch nothing reads makes every cell `same`.
    switch_note: str | None = None
    # The cells chosen (`--only`, ab-run.json's): a verdict over some of the bench's cells
    # says which. Added without a version step: older files read as choosing none.
    only: list[str] = []
    aa: bool
    min_effect_pct: float
    created_utc: str
    order: list[list[str]]  # per round, the sides in the order they ran
    runs: list[RunRecord]
    cells: list[AbCell]
    failed_variants: dict[str, list[int]]
    failed_runs: list[FailedRun]
    summary: AbSummary
    measured_on: MeasuredOn | None = None  # None: written before version 6 kept it


def side_setting(switch: str, value: str | None) -> str:
    """What a side does with the switch, as every output says it: `VAR=value`, or `VAR
    unset` (not the same as `VAR=`, which sets it to the empty string)."""
    return f"{switch} unset" if value is None else f"{switch}={value}"


def only_flags(report: AbReport) -> str:
    """The cells an A/B was restricted to, as its command line chose them: '--only n=1
    --only variant=plain'."""
    return " ".join(f"--only {choice}" for choice in report.only)


def _sequential(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "schedule": "sequential"}


def _turns_summarized(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2's deltas were as measured (slot_effects_pct stays None); its cells' turns
    lose the per-turn lists that r<k>_turns.json holds."""
    kept = tuple(TurnsSummary.model_fields)
    for cell in data.get("cells", []):
        if cell.get("turns"):
            cell["turns"] = [{k: v for k, v in t.items() if k in kept} for t in cell["turns"]]
    return data


def _measured_on_not_recorded(data: dict[str, Any]) -> dict[str, Any]:
    """Versions 1 to 5 kept no provenance of their sides; `kernbench summarize` reads it
    from the side folders."""
    return {**data, "measured_on": None}


AB_FORMAT = FileFormat("report of an A/B", AB_VERSION, AbReport,
                       update_to={2: _sequential, 3: _turns_summarized, 4: unchanged, 5: unchanged,
                                  6: _measured_on_not_recorded})
TURNS_FORMAT = FileFormat("turns file of an interleaved round", TURNS_VERSION, RoundTurns)
