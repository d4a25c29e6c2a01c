"""`report.md`: the A/B table, the summary, the failed variants and the figure."""

from __future__ import annotations

import math

import jinja2

from kernbench.results.ab import AbReport

TEMPLATE = """\
# A/B of `{{ r.switch }}` on {{ r.bench }}

A: `{{ r.switch }}={{ r.a }}`, B: `{{ r.switch }}={{ r.b }}`; {{ r.rounds }} rounds, each side \
a fresh process on {{ r.device }}, order per round: {{ order }}. Minimum effect \
{{ r.min_effect_pct | num }} %{% if r.aa %}, A/A control on (threshold: the larger of the \
minimum effect and the cell's A/A floor){% endif %}.

## Summary

- Verdicts: {% for name, count in r.summary.verdicts.items() %}{{ name }} {{ count }}\
{{ ", " if not loop.last }}{% endfor %} (of {{ r.summary.cells }} cells).
{%- for variant, ratio in r.summary.geomean_ratio.items() %}
- `{{ variant }}`: geometric-mean B/A time ratio {{ "%.4f" | format(ratio) }} \
({{ r.summary.geomean_delta_pct[variant] | pct }}).
{%- endfor %}
- Cells whose per-round delta changes sign: \
{{ r.summary.sign_flip_cells | join(", ") if r.summary.sign_flip_cells else "none" }}.
- False faster/slower calls to expect with no effect at all: at most \
{{ "%.2f" | format(r.summary.expected_false_calls) }}.
{%- if r.summary.interval_note %}
- Note: {{ r.summary.interval_note }}.
{%- endif %}
{% if r.failed_variants %}
## Failed variants (no verdicts)

| variant | failed rounds | run | log | reason |
| --- | --- | --- | --- | --- |
{% for f in r.failed_runs -%}
| {{ f.variant }} | {{ r.failed_variants[f.variant] | join(", ") }} | {{ f.run }} | \
[{{ f.log }}]({{ f.log }}) | {{ f.reason | cell }} |
{% endfor %}
{%- endif %}
## Cells
{% if r.cells %}
| cell | verdict | delta | interval | coverage | threshold |{{ " A/A floor |" if r.aa }} \
within-side noise | delta spread | sign flips | order effect |
| --- | --- | ---: | ---: | ---: | ---: |{{ " ---: |" if r.aa }} ---: | ---: | ---: | ---: |
{% for c in r.cells -%}
| {{ c.id }} | {{ c.verdict }} | {{ c.delta_pct | pct }} | \
[{{ c.ci_pct[0] | pct }}, {{ c.ci_pct[1] | pct }}] | \
{{ "%.1f" | format(100 * c.ci_coverage) }} % | ±{{ c.threshold_pct | num }} % |\
{{ (" " ~ (c.aa_floor_pct | num) ~ " % |") if r.aa }} {{ c.within_side_noise_pct | num }} % | \
{{ c.delta_spread_pct | num }} % | {{ c.sign_flips }} | {{ c.order_effect_pct | pct }} |
{% endfor %}
{%- if figure %}
![per-round deltas]({{ figure }})
{% endif %}
{%- else %}
No cell has a verdict.
{% endif %}
delta: median over rounds of the paired per-round delta 100·(B/A − 1) of the two sides' \
round medians; positive means B is slower. interval: order statistics of the per-round \
deltas covering the median with the coverage shown. within-side noise: median relative \
IQR of one side's samples, over rounds and sides. delta spread: max − min of the per-round \
deltas. order effect: mean delta of A-first rounds minus B-first rounds.\
{% if r.aa %} A/A floor: the largest |delta| between two A sides over the A/A rounds.{% endif %}
"""


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:+.2f} %"


def _num(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: AbReport, figure: str | None) -> str:
    """The report text; `figure` is the figure's path relative to the report, if any."""
    environment = jinja2.Environment(
        autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined
    )
    environment.filters.update(pct=_pct, num=_num, cell=_cell)
    order = ", ".join(f"r{k} {'/'.join(sides)}" for k, sides in enumerate(report.order, 1))
    return environment.from_string(TEMPLATE).render(r=report, order=order, figure=figure)
