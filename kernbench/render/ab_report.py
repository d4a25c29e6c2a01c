"""`report.md`: the A/B table, the summary, the failed variants and the figure."""

from __future__ import annotations

import math
import statistics
from typing import Any

import jinja2

from kernbench.analyze.stats import CONFIDENCE
from kernbench.render.measured_on import where_measured
from kernbench.results.ab import (
    AA_ALPHA,
    AA_MIN_ROUNDS,
    AA_VERDICT_MEANINGS,
    VERDICT_MEANINGS,
    AbReport,
    RunRecord,
    only_flags,
    side_setting,
)
from kernbench.spec.ab_model import MIN_ROUNDS
from kernbench.units import counted, labelled, seconds_text, signed_pct

TEMPLATE = """\
# A/B of `{{ r.switch }}` on {{ r.bench }}

A: `{{ r.a | setting(r.switch) }}`, B: `{{ r.b | setting(r.switch) }}`; \
{{ r.rounds | counted("round") }}\
{{ (" (interrupted: " ~ r.planned_rounds ~ " asked for; judged on the rounds every side \
finished" ~ ("; too few for a verdict, `kernbench ab --resume` runs the rest" \
if r.rounds < min_rounds else "") ~ ")") if r.planned_rounds }}\
{{ (" (auto: more while a cell was unstable, up to " ~ r.max_rounds ~ ")") if r.max_rounds }} on \
{{ r.device }}, schedule **{{ r.schedule }}**: \
{% if r.schedule == "interleaved" %}in each round the sides{{ " (A, B, A')" if r.aa }} are \
fresh processes that live side by side and take turns on the device, cell by cell, \
{{ turns }}.{% else %}each side a fresh process, one after the other, order per round: \
{{ order }}.{% endif %} Minimum effect \
{{ r.min_effect_pct | num }} %{% if r.aa %}, A/A control on (threshold: the larger of the \
minimum effect and the cell's A/A floor){% endif %}.{% if r.only %} Only the cells \
chosen with `{{ r | only_flags }}`.{% endif %}

Measured on {{ where.machine }}; code: {{ where.code }}.
{% if where.warning %}
**Warning:** {{ where.warning }}.
{% endif %}
## Summary

{% if r.switch_note %}- {{ r.switch_note | switch_check }}
{% endif -%}
- Verdicts: {% for name, count in r.summary.verdicts.items() %}{{ name }} {{ count }}\
{{ ", " if not loop.last }}{% endfor %} (of {{ r.summary.cells | counted("cell") }}).
{%- for variant, ratio in r.summary.geomean_ratio.items() %}
- `{{ variant }}`: geometric-mean B/A time ratio {{ "%.4f" | format(ratio) }} \
({{ r.summary.geomean_delta_pct[variant] | pct }}).
{%- endfor %}
- Cells whose per-round delta changes sign: \
{{ r.summary.sign_flip_cells | join(", ") if r.summary.sign_flip_cells else "none" }}.
- False faster/slower calls to expect with no effect at all: at most \
{{ "%.2f" | format(r.summary.expected_false_calls) }}.
{%- if pins %}
- Pins: {{ pins }}.
{%- endif %}
{%- if mixed %}
- Timers differ between the runs of {{ mixed }}: those deltas compare unlike samples.
{%- endif %}
{%- if fewer %}
- Judged without a failed round: {{ fewer }}.
{%- endif %}
{%- if r.summary.unjudged_cells %}
- No verdict (no round measured by every side): {{ r.summary.unjudged_cells | join(", ") }}.
{%- endif %}
{%- if r.summary.interval_note %}
- Note: {{ r.summary.interval_note }}.
{%- endif %}
{%- if raised %}
- Note: {{ raised }}.
{%- endif %}
{% if r.failed_variants %}
## Failures

Each cell run that failed (a run that left no results: once a variant); a cell is judged \
without the rounds it failed in, on the others (unstable when fewer than {{ min_rounds }} are left).

| variant | round | run | log | reason |
| --- | ---: | --- | --- | --- |
{% for f in r.failed_runs -%}
| {{ f.variant }} | {{ f.round }} | {{ f.run }} | [{{ f.log }}]({{ f.log }}) | \
{{ f.reason | cell }} |
{% endfor %}
{%- endif %}
## Cells
{% if r.cells %}
| cell | verdict | delta | interval | coverage | A time | B time | threshold |\
{{ " A/A floor | A/A p |" if r.aa }} within-side noise | delta spread | sign flips | \
order effect |{{ " start slots |" if slots }}\
{{ " rounds needed |" if r.max_rounds }}
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |{{ " ---: | ---: |" if r.aa }} \
---: | ---: | ---: | ---: |\
{{ " ---: |" if slots }}{{ " ---: |" if r.max_rounds }}
{% for c in r.cells -%}
| {{ c.id }} | {{ c.verdict }} | {{ c.delta_pct | pct }} | \
[{{ c.ci_pct[0] | pct }}, {{ c.ci_pct[1] | pct }}] | \
{{ "%.1f" | format(100 * c.ci_coverage) }} % | {{ c.a_medians_s | time }} | \
{{ c.b_medians_s | time }} | ±{{ c.threshold_pct | num }} % |\
{{ (" " ~ (c.aa_floor_pct | num) ~ " % | " ~ (c.aa_p | num) ~ " |") if r.aa }} \
{{ c.within_side_noise_pct | num }} % | \
{{ c.delta_spread_pct | num }} % | {{ c.sign_flips }} | {{ c.order_effect_pct | pct }} |\
{{ (" " ~ (c.slot_effects_pct | slots) ~ " |") if slots }}\
{{ (" " ~ (c.rounds_needed or "-") ~ " |") if r.max_rounds }}
{% endfor %}
{%- if figure %}
![per-round deltas]({{ figure }})
{% endif %}
{%- else %}
No cell has a verdict.
{% endif %}
{{ notes }}
"""


NOTES = """\
verdict: {{ verdict_meanings }} {{ aa_verdict_meanings if r.aa else "The threshold is the \
minimum effect." }} More rounds (--rounds auto) or a quieter machine may tell an unstable \
cell.

delta: median over rounds of the per-round delta 100·(B/A − 1)\
{% if r.schedule == "interleaved" %} (per round: the median of the paired turn deltas, each \
B turn against the A turn of its block){% else %} of the two sides' round medians{% endif %}; \
positive means B is slower. A time, B time: the time of one call, each side's round \
medians' median. interval: order statistics of the per-round \
deltas covering the median with the coverage shown. within-side noise: median relative \
IQR of one side's samples, over rounds and sides. delta spread: max − min of the per-round \
deltas. order effect: {% if r.schedule == "interleaved" %}median paired delta of blocks \
where A went first minus blocks where B did{% else %}mean delta of A-first rounds minus \
B-first rounds{% endif %}.\
{% if slots %} start slots: how much slower the processes started second and third ran \
than the one started first, fitted over the rounds (each side takes each start slot in \
turn); the per-round deltas, the interval and the A/A floor are without it, their scatter \
widened for the fit's degrees of freedom (n/a: the rounds cannot separate it).{% endif %}\
{% if r.aa %} A/A floor: the largest |delta| between two A sides \
{{ "(A and A', interleaved like B)" if r.schedule == "interleaved" else "over the A/A rounds" }}\
. A/A p: two-sided Wilcoxon signed-rank p-value of each round's delta minus its A/A delta \
(from {{ aa_min_rounds }} rounds; n/a below); at \
{{ aa_alpha }} or more, with the delta inside the threshold, the cell is same even where its \
interval crosses the threshold (it looks like the A/A control).{% endif %}\
{% if r.max_rounds %} rounds needed: the round from which on the cell's verdict was the final \
one (-: unstable to the end), never fewer than the rounds whose interval reaches \
{{ confidence }} (a verdict of fewer rounds rests on an interval that misses a no-effect \
median too often to count).{% endif %}
"""


def column_notes(report: AbReport) -> str:
    """What each verdict and column of the cells' table means, as both reports say it
    under the table (report.html is read on its own, so it says it too)."""
    environment = jinja2.Environment(autoescape=False, undefined=jinja2.StrictUndefined)
    return environment.from_string(NOTES).render(
        r=report, slots=report.schedule == "interleaved", verdict_meanings=VERDICT_MEANINGS,
        aa_verdict_meanings=AA_VERDICT_MEANINGS, aa_min_rounds=AA_MIN_ROUNDS, aa_alpha=AA_ALPHA,
        confidence=f"{CONFIDENCE:.0%}".replace("%", " %")).strip()


def raised_threshold_note(report: AbReport) -> str | None:
    """How many `same` cells the A/A floor judged against more than the minimum effect,
    and up to what: there `same` rules out less than the minimum effect says (a noisy A/A
    round raises its cell's threshold alone); None where no such cell was called same."""
    raised = [c.threshold_pct for c in report.cells
              if c.verdict == "same" and c.threshold_pct > report.min_effect_pct]
    if not raised:
        return None
    verb = "was" if len(raised) == 1 else "were"
    return (f"{len(raised)} of {counted(report.summary.verdicts['same'], 'cell')} called same "
            f"{verb} judged against a threshold the A/A floor raised above the "
            f"{_num(report.min_effect_pct)} % minimum effect (up to ±{_num(max(raised))} %): "
            f"same there rules out only an effect beyond it")


def switch_check_text(note: str) -> str:
    """The switch check's line: its note's own label ('warning: ', 'note: ') after the
    heading, not a second label in the line."""
    label, colon, text = note.partition(": ")
    if colon and label in ("warning", "note"):
        return f"Switch check ({label}): {text}"
    return f"Switch check: {note}"


def pct_text(value: float) -> str:
    """A delta in percent with its sign, e.g. '+1.85 %'; 'n/a' for NaN."""
    return "n/a" if math.isnan(value) else f"{signed_pct(value)} %"


def setting_text(value: str | None, switch: str) -> str:
    """A side's value as the reports show it: `VAR=0`, or `VAR unset`."""
    return side_setting(switch, value)


def _num(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}"


def slot_text(effects: list[float] | None) -> str:
    """The start slots' fitted effects after the first, e.g. '-1.85 / -0.17 %'."""
    return "n/a" if effects is None else " / ".join(f"{e:+.2f}" for e in effects[1:]) + " %"


def median_time(medians_s: list[float]) -> str:
    """A side's time in the table: its round medians' median, or a dash where none."""
    return seconds_text(statistics.median(medians_s)) if medians_s else "—"


def table_cell(text: str) -> str:
    """`text` as one cell of a markdown table: its pipes escaped, its lines joined."""
    return text.replace("|", "\\|").replace("\n", " ")


# The filters both A/B reports (report.md here, report.html in render.report) use.
AB_FILTERS = {"pct": pct_text, "num": _num, "cell": table_cell, "slots": slot_text,
              "setting": setting_text, "switch_check": switch_check_text,
              "only_flags": only_flags, "counted": counted,
              "time": median_time}


def ab_context(report: AbReport) -> dict[str, Any]:
    """What both A/B reports show besides the report's own fields."""
    return {"r": report, "pins": pins_line(report), "mixed": mixed_timers(report),
            "slots": report.schedule == "interleaved", "fewer": fewer_rounds(report),
            "where": where_measured(report), "notes": column_notes(report),
            "raised": raised_threshold_note(report), "min_rounds": MIN_ROUNDS}


def render_markdown(report: AbReport, figure: str | None) -> str:
    """The report text; `figure` is the figure's path relative to the report, if any."""
    environment = jinja2.Environment(
        autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined
    )
    environment.filters.update(AB_FILTERS)
    order = ", ".join(f"r{k} {'/'.join(sides)}" for k, sides in enumerate(report.order, 1))
    return environment.from_string(TEMPLATE).render(
        **ab_context(report), order=order, turns=_turns(report), figure=figure,
    )


def fewer_rounds(report: AbReport) -> str:
    """The cells judged without a round they failed in, e.g. 'c (rounds 1, 3 of 3)'."""
    def judged(failed: list[int]) -> str:
        kept = [str(k) for k in range(1, report.rounds + 1) if k not in failed]
        return f"{labelled('round', kept)} of {report.rounds}"

    return "; ".join(f"{cell.id} ({judged(cell.failed_rounds)})"
                     for cell in report.cells if cell.failed_rounds)


def mixed_timers(report: AbReport) -> str:
    """The cells whose runs did not all use one timer, e.g. 'c (graph 16, event 2)'."""
    def counts(timers: dict[str, int]) -> str:
        return ", ".join(f"{name} {n}" for name, n in sorted(timers.items(), key=lambda x: -x[1]))

    return "; ".join(f"{cell.id} ({counts(cell.timers)})"
                     for cell in report.cells if len(cell.timers) > 1)


def pins_line(report: AbReport) -> str | None:
    """Who recorded the pins and whether every other run replayed them, e.g. 'recorded by
    r1_A (4); replayed by the 17 other runs (4 each)'; None when no run used a pin."""
    if not any(run.pins for run in report.runs):
        return None

    def tuned(run: RunRecord) -> int:
        return run.pins.get("recorded", 0) + run.pins.get("stale-retuned", 0)

    recorders = [run for run in report.runs if tuned(run)]
    others = [run for run in report.runs if not tuned(run)]
    recorded = ", ".join(f"{run.name} ({tuned(run)})" for run in recorders)
    parts = [f"recorded by {recorded or 'no run'}"]
    replays = {run.pins.get("replayed", 0) for run in others}
    if others and 0 not in replays and len(replays) == 1:
        parts.append(f"replayed by the {counted(len(others), 'other run')} ({replays.pop()} each)")
    elif others:
        replayed = [f"{run.name} ({run.pins['replayed']})" for run in others
                    if run.pins.get("replayed")]
        idle = [run.name for run in others if not run.pins.get("replayed")]
        if replayed:
            parts.append("replayed by " + ", ".join(replayed))
        if idle:
            parts.append("none replayed by " + ", ".join(idle))
    return "; ".join(parts)


def _turns(report: AbReport) -> str:
    """How many turns the cells took, e.g. '12 to 24 turns a side per round, 3 to 49 calls
    a turn'."""
    if report.rounds == 0:
        return "no round finished"
    if not report.cells:
        return "no cell measured by every side"
    records = [t for c in report.cells for t in (c.turns or []) if t.turns_per_side]
    if not records:
        return "no turns taken"
    turns = sorted({t.turns_per_side for t in records})
    calls = sorted({t.calls_per_turn for t in records})

    def span(values: list[int]) -> str:
        return str(values[0]) if len(values) == 1 else f"{values[0]} to {values[-1]}"

    return f"{span(turns)} turns a side per round, {span(calls)} calls a turn"
