"""A run as a page: `report.md` and a self-contained `report.html` beside results.json.

What was run (bench, device, provenance, timer, rounds), a table per variant with each
cell's median, interval, throughput and flags (invalid, under-tile, throttled, failed
with its reason), and the figures (linked from the markdown, embedded in the HTML). The
templates ship in the package (`render/templates/`).
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jinja2

from kernbench.analyze.rates import RATE_METRICS
from kernbench.analyze.stats import (
    CONFIDENCE,
    UNRESOLVED_RULE,
    unresolved_advice,
)
from kernbench.render import render_results, requested_figures
from kernbench.render.ab import AB_FIGURE
from kernbench.render.ab_report import AB_FILTERS, ab_context, table_cell
from kernbench.render.headline import headline
from kernbench.render.legend import UNSTEADY_SPAN, cell_flags, legend
from kernbench.render.setup_lines import ceilings_text, machine_text
from kernbench.results import atomic
from kernbench.results.ab import AbReport
from kernbench.results.kinds import REPORT_HTML, REPORT_MD
from kernbench.results.model import CellResult, Results, Summary
from kernbench.results.provenance import code_label
from kernbench.spec.model_metrics import rate_name
from kernbench.units import count_rate_unit, counted, prefixed, seconds_text, si_prefix

TEMPLATES = Path(__file__).parent / "templates"
# A table shows the cells' RATE_METRICS, in their order, then the metrics the bench
# declares itself beyond the model's inputs (an arithmetic intensity, tokens per call), each
# count under its `rates:` followed by its rate per second.
# The RATE_METRICS' column headings, with the unit (results.json and the export keep the names).
HEADINGS = {"tflops": "TFLOP/s", "gbs": "GB/s", "busbw_gbs": "busbw GB/s",
            "algbw_gbs": "algbw GB/s", "util": "% of dtype peak"}
PERCENT = {"util"}  # stored as a fraction of the ceiling, shown as a percentage
MODEL_INPUTS = ("flops", "bytes")


def write_report(results: Results, folder: Path) -> list[Path]:
    """report.md and report.html in `folder`, with the figures found in `folder/figures`."""
    folder = Path(folder)
    figures = _in_bench_order((folder / "figures").glob("*.png"), results)
    context = report_context(results, figures, folder)
    written = []
    for name, template in ((REPORT_MD, "run_report.md.j2"), (REPORT_HTML, "run_report.html.j2")):
        path = folder / name
        text = _environment(name).get_template(template).render(**context)
        # The templates' optional sections leave runs of empty lines where they are absent.
        atomic.write_text(path, re.sub(r"\n{3,}", "\n\n", text))
        written.append(path)
    return written


def _in_bench_order(figures: Iterable[Path], results: Results) -> list[Path]:
    """The figures in the order the bench names them (throughput before the stage
    breakdown it explains), any others after, by name."""
    named = [str(name) for name in results.spec.get("figures") or []]
    return sorted(figures, key=lambda f: (named.index(f.stem) if f.stem in named
                                          else len(named), f.stem))


def report_results(results: Results, folder: Path) -> list[Path]:
    """A report of any results file: its figures not yet in `folder/figures` drawn there
    first (all of them, or those a drawing killed on its way left undrawn)."""
    folder = Path(folder)
    missing = [name for name in requested_figures(results, None)
               if not (folder / "figures" / f"{name}.png").is_file()]
    if missing:
        render_results(results, folder / "figures", missing, parallel=True)
    return write_report(results, folder)


def report_context(results: Results, figures: Sequence[Path], folder: Path) -> dict[str, Any]:
    prov = results.provenance
    return {
        "r": results,
        "prov": prov,
        "device": prov.get("device_name") or prov.get("cpu") or results.device,
        "machine": machine_text(results),
        "ceilings": ceilings_text(results),
        "code": code_label(prov),  # as the figures' footer says it
        "timer": _timer_text(results) + _duty_text(results),
        "counts": sorted(Counter(c.status for c in results.cells).items()),
        "checked": _checks_text(results.cells),
        "headline": headline(results),
        "legend": legend(results),
        "groups": _groups(results.cells, _declared_metrics(results), _rate_units(results)),
        # Where `auto` picked more than one timer, each row says its own: an event-timed
        # call carries its launch gap, a graph replay does not, so neighbours differ by it.
        "timer_column": len(_timers_used(results)) > 1,
        "interval_column": f"{CONFIDENCE:.0%} CI of the median",  # as `_interval_text` judges
        "failed": _listed(results.cells, "failed"),
        "pending": _listed(results.cells, "pending"),
        "unresolved": sum(c.unresolved for c in results.cells),
        "unresolved_rule": UNRESOLVED_RULE,
        "unresolved_advice": unresolved_advice(results.device),
        "figures": [
            {"name": f.stem, "link": f.relative_to(folder).as_posix(),
             "base64": base64.b64encode(f.read_bytes()).decode()}
            for f in figures
        ],
    }


def _checks_text(cells: Sequence[CellResult]) -> str:
    """Whether each cell's output was compared with a reference before it was timed, and
    the error nearest its tolerance: a table of times says nothing of it, and a plain
    callable is timed unchecked."""
    checks = {c.id: [r.check for r in c.rounds if r.check] for c in cells}
    checked = {cell: found for cell, found in checks.items() if found}
    if not checked:
        return _none_checked(cells)
    passed = sum(all(check.ok for check in found) for found in checked.values())
    text = f"{len(checked)} of {counted(len(cells), 'cell')} against a reference, {passed} passed"
    errors = [check for found in checked.values() for check in found
              if check.rel_err is not None and math.isfinite(check.rel_err)
              and check.tolerance > 0]
    if errors:
        worst = max(errors, key=lambda check: (check.rel_err or 0.0) / check.tolerance)
        text += (f"; the largest relative error {worst.rel_err:.2g} "
                 f"(tolerance {worst.tolerance:.2g})")
    return text


def _none_checked(cells: Sequence[CellResult]) -> str:
    """Why no cell has a check: a measured cell passed where its check would run, so the
    kernel has none; where none was measured, none got that far."""
    if any(c.status in ("ok", "invalid") for c in cells):
        return "no cell (the kernel has no check: its output was never compared)"
    failed = sum(c.status == "failed" for c in cells)
    pending = sum(c.status == "pending" for c in cells)
    why = [f"{failed} failed before it"] * bool(failed) + [f"{pending} pending"] * bool(pending)
    return "no cell reached its check" + (f" ({', '.join(why)})" if why else "")


def _listed(cells: Sequence[CellResult], status: str) -> list[dict[str, str]]:
    return [{"id": c.id, "reason": c.reason or "no reason given"}
            for c in cells if c.status == status]


def _declared_metrics(results: Results) -> list[str]:
    declared = results.spec.get("metrics") or {}
    counts = results.spec.get("rates") or []
    shown = []
    for name in declared:
        if name not in (*MODEL_INPUTS, *RATE_METRICS):
            shown.append(name)
            if name in counts:
                shown.append(rate_name(name))
    return shown


def _rate_units(results: Results) -> dict[str, tuple[float, str]]:
    """The scale and heading of each `rates:` count's rate column: one SI prefix for the
    whole column, that of its largest value, so that its rows compare at a glance."""
    units = {}
    for count in results.spec.get("rates") or []:
        name = rate_name(count)
        largest = max((c.metrics[name] for c in results.cells if name in c.metrics), default=0.0)
        scale, prefix = si_prefix(largest)
        units[name] = scale, prefixed(prefix, count_rate_unit(count))
    return units


def _groups(cells: Sequence[CellResult], declared: Sequence[str],
            scaled: dict[str, tuple[float, str]]) -> list[dict[str, Any]]:
    """A table per variant; `scaled`: the rate columns' scales and headings."""
    by_variant: dict[str, list[CellResult]] = {}
    for cell in cells:
        by_variant.setdefault(cell.variant, []).append(cell)
    groups = []
    for variant, members in by_variant.items():
        present = {name for c in members for name in c.metrics}
        metrics = [m for m in (*RATE_METRICS, *declared) if m in present]
        if "busbw_gbs" in metrics:  # a collective's gbs is its algbw, shown already
            metrics.remove("gbs")
        groups.append({"variant": variant, "metrics": metrics,
                       "headings": [scaled[m][1] if m in scaled else HEADINGS.get(m, m)
                                    for m in metrics],
                       "settles": any(_settled(c)[1] for c in members),
                       "rows": [_row(c, metrics, scaled) for c in members]})
    return groups


def _row(cell: CellResult, metrics: Sequence[str],
         scaled: dict[str, tuple[float, str]]) -> dict[str, Any]:
    summary = cell.summary
    settled, settles = _settled(cell)
    return {
        "id": cell.id,
        "status": cell.status,
        "median": _time_text(summary.median_s) if summary else "",
        "interval": _interval_text(cell, summary) if summary else "",
        "rounds": _rounds_text(cell),
        "settled": f"{settled}/{settles}" if settles else "",
        "timer": ", ".join(sorted({r.timer for r in cell.rounds if r.timer})),
        "metrics": {m: _metric_text(cell.metrics[m], m, scaled)
                    for m in metrics if m in cell.metrics},
        "flags": ", ".join(cell_flags(cell)),
    }


def _metric_text(value: float, metric: str, scaled: dict[str, tuple[float, str]]) -> str:
    if metric in PERCENT:
        return f"{100 * value:.3g}"
    return f"{value / (scaled[metric][0] if metric in scaled else 1.0):.4g}"


def _time_text(seconds: float) -> str:
    """A time, or a dash for a value at or below zero: a sample less a flush estimate can
    be one (the flags say `unresolved`), and no call takes no time."""
    return seconds_text(seconds) if seconds > 0 else "—"


def _interval_text(cell: CellResult, summary: Summary) -> str:
    """The median's confidence interval, with its coverage where too few samples reach the
    CONFIDENCE the column names. One that reaches zero or below is shown as its upper end:
    all it says is that the time is under it. An unsteady cell's rounds disagree, so the
    pooled interval understates what is known: it is widened to span the round medians and
    said to be that, not a CI."""
    medians = summary.round_medians_s
    if cell.unsteady and len(medians) >= 2:
        low = min(summary.ci_low_s, *medians)
        high = max(summary.ci_high_s, *medians)
        bounds = f"[{seconds_text(low)}, {seconds_text(high)}]" if low > 0 else (
            f"< {seconds_text(high)}")
        return f"{bounds} {UNSTEADY_SPAN}"
    if summary.ci_low_s > 0:
        text = f"[{seconds_text(summary.ci_low_s)}, {seconds_text(summary.ci_high_s)}]"
    elif summary.ci_high_s > 0:
        text = f"< {seconds_text(summary.ci_high_s)}"
    else:
        text = "—"
    if summary.ci_coverage < CONFIDENCE:
        text += f" ({100 * summary.ci_coverage:.0f}% coverage)"
    return text


def _rounds_text(cell: CellResult) -> str:
    """How many rounds, and how far their medians lie apart: the pooled interval beside it
    says nothing of that."""
    medians = cell.summary.round_medians_s if cell.summary else []
    if len(medians) < 2:
        return str(len(cell.rounds))
    return f"{len(medians)}: {seconds_text(min(medians))} to {seconds_text(max(medians))}"


def _timer_text(results: Results) -> str:
    """The timer as set, with the ones `auto` picked; the L2 setting only on a GPU, the one
    place a timer flushes it (the CPU timer loops over warm caches whatever it says)."""
    timer = results.spec.get("timer", {})
    kind = timer.get("kind", "auto")
    used = _timers_used(results)
    parts = [f"{kind} timer" + (f" ({', '.join(used)})" if used and used != [kind] else "")]
    if "l2" in timer and results.device == "cuda":
        parts.append(f"L2 {timer['l2']}")
    for key, label in (("warmup_s", "warm-up"), ("budget_s", "budget")):
        if key in timer:
            parts.append(f"{label} {timer[key]:g} s")
    if "rel_ci" in timer:
        parts.append(f"stop at ±{100 * timer['rel_ci']:g}% of the median")
    return ", ".join(parts)


def _timers_used(results: Results) -> list[str]:
    return sorted({r.timer for c in results.cells for r in c.rounds if r.timer})


def _duty_text(results: Results) -> str:
    """The power state the GPU samples were taken in, from what the rounds recorded."""
    duties = {r.duty for c in results.cells for r in c.rounds if r.status == "ok"}
    if results.device != "cuda" or not duties:
        return ""
    if duties == {None}:
        return "; duty not recorded (measured before kernbench recorded it)"
    # How long the recorded settle phases ran, each turn's as the mean of its round's:
    # what the data says, whichever rule measured it.
    phases = [r.settle for c in results.cells for r in c.rounds if r.settle]
    spans = [phase["seconds"] / _turns(phase) for phase in phases]
    a_turn = " a turn" if any(_turns(phase) > 1 for phase in phases) else ""
    named = []
    for duty in sorted(d for d in duties if d is not None):
        if duty == "sustained" and spans:
            named.append(f"sustained duty (back to back, after settle phases of "
                         f"{seconds_text(min(spans))} to {seconds_text(max(spans))}"
                         f"{a_turn}, to ±{100 * results.timer_setting('settle_tol'):g}%)")
        elif duty == "sustained":
            # A collective warms up in doubling batches instead (ADR 0042): say so, rather
            # than leave the reader to guess whether a settle phase ran.
            named.append("sustained duty (back to back, no settle phase recorded)")
        else:
            named.append(f"{duty} duty (an idle gap before each sample)")
    return "; " + " and ".join(named)


def _turns(settle: dict[str, Any]) -> int:
    return len(settle.get("turn_settle_blocks") or [None])


def _settled(cell: CellResult) -> tuple[int, int]:
    """How many of the cell's settle phases (one a round, or one a turn) ended with two
    blocks agreeing, of how many ran."""
    settled = settles = 0
    for r in cell.rounds:
        if r.settle is None:
            continue
        settles += _turns(r.settle)
        settled += int(r.settle.get("turns_settled", r.settle.get("settled", False)))
    return settled, settles


def _environment(name: str) -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=name.endswith(".html"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters.update(cell=table_cell, counted=counted)
    return environment


def write_ab_html(report: AbReport, folder: Path) -> list[Path]:
    """The HTML twin of an A/B's report.md, its figure embedded."""
    folder = Path(folder)
    figure = folder / AB_FIGURE
    encoded = base64.b64encode(figure.read_bytes()).decode() if figure.is_file() else None
    environment = _environment(REPORT_HTML)
    environment.filters.update(AB_FILTERS)
    path = folder / REPORT_HTML
    atomic.write_text(path, environment.get_template("ab_report.html.j2").render(
        **ab_context(report), figure=encoded,
    ))
    return [path]
