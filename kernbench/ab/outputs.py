"""Write an A/B folder's outputs (ab.json, then the render registry's), and rebuild them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from kernbench.ab.analysis import analyze
from kernbench.ab.outcomes import finished_rounds, load_outcomes, load_turns
from kernbench.ab.schedule import AbManifest, load_manifest
from kernbench.execute.lock import folder_lock
from kernbench.render.ab_report import raised_threshold_note
from kernbench.render.measured_on import where_measured
from kernbench.render.outputs import write_ab_outputs
from kernbench.results import atomic
from kernbench.results.ab import AB_FORMAT, AbReport, side_setting
from kernbench.results.kinds import AB_JSON_NAME
from kernbench.results.model import NOT_TIMED
from kernbench.spec.ab_model import checked_min_effect
from kernbench.units import counted, labelled, signed_pct


def write_outputs(folder: Path, report: AbReport) -> None:
    """ab.json, then every output the render registry has for an A/B; the temporaries a
    kill left beside them (or beside the plan, pins or turns: no side runs now) go."""
    folder = Path(folder)
    AB_FORMAT.write(folder / AB_JSON_NAME, report)
    write_ab_outputs(report, folder)
    atomic.remove_temporaries(folder)


def summarize_ab(folder: Path, min_effect: float | None = None) -> AbReport:
    """Rebuild ab.json, report.md and the figure from an A/B folder, running nothing.

    With the manifest's minimum effect this reproduces ab.json exactly. An A/B that was
    interrupted (killed, out of time) is judged on the rounds all its sides finished, and
    says so (with fewer than two, every cell is unstable but keeps its round's deltas);
    `kernbench ab --resume` runs the rest."""
    if min_effect is not None:
        checked_min_effect(min_effect)
    folder = Path(folder)
    manifest = load_manifest(folder)
    planned, finished = manifest.rounds, finished_rounds(folder, manifest)
    if finished < planned:
        # max_rounds stays: an auto A/B interrupted in a round it added still says so.
        manifest = manifest.model_copy(update={
            "rounds": finished, "runs": [run for run in manifest.runs if run.round <= finished],
        })
    outcomes = load_outcomes(folder, manifest)
    report = analyze(manifest, outcomes, min_effect, load_turns(folder, manifest))
    if manifest.rounds < planned:
        report = report.model_copy(update={"planned_rounds": planned})
    write_outputs(folder, report)
    return report


def summarize_locked(
    folder: Path, min_effect: float | None, note: Callable[[str], None]
) -> AbReport:
    """`summarize_ab` holding the folder's lock: a folder an A/B is still writing (or
    resuming) is refused, not summarized half-way and written into."""
    load_manifest(folder)  # a folder that is no A/B is refused before the lock creates it
    with folder_lock(folder, note):
        return summarize_ab(folder, min_effect)


def interrupted_line(folder: Path, report: AbReport) -> str | None:
    """What `summarize` says of an A/B that was interrupted, None of a finished one."""
    if report.planned_rounds is None:
        return None
    return stopped_line(folder, report.rounds, report.planned_rounds)


def stopped_line(folder: Path, finished: int, planned: int, reported_in: Path | None = None) -> str:
    """The one line of an interrupted A/B, `ab`'s and `summarize`'s; `reported_in` names the
    report where no line before it does (`ab`'s)."""
    where = f", reported in {reported_in}" if reported_in else ""
    return (f"interrupted: {finished} of {counted(planned, 'round')} finished{where}; "
            f"continue with: kernbench ab --resume {folder}")


def opening_line(manifest: AbManifest, cells: int) -> str:
    """What `ab` says before its first round: the sides, the cells, the rounds, the
    schedule (and why another than asked), the minimum effect and the A/A control."""
    auto = f" (auto: up to {manifest.max_rounds})" if manifest.max_rounds else ""
    note = f" ({manifest.schedule_note})" if manifest.schedule_note else ""
    a, b = (side_setting(manifest.switch, value) for value in (manifest.a, manifest.b))
    return (f"A/B of {manifest.switch} on {manifest.bench}: A {a}, B {b}; "
            f"{counted(cells, 'cell')}, "
            f"{counted(manifest.rounds, 'round')}{auto}, schedule {manifest.schedule}{note}, "
            f"minimum effect {manifest.min_effect:g} %{', A/A control on' if manifest.aa else ''}")


TABLE_ROWS = 20  # more cells than this: the terminal lists those not `same` first


def verdict_table(report: AbReport) -> list[str]:
    """The cells' verdicts as `ab` and `summarize` print them before their closing lines:
    a row per cell with its delta, interval, coverage and threshold (report.md has every
    column); over TABLE_ROWS cells, the ones not `same` first, and a line for the rest."""
    cells = report.cells
    if not cells:
        return []
    shown = cells if len(cells) <= TABLE_ROWS else (
        [c for c in cells if c.verdict != "same"] + [c for c in cells if c.verdict == "same"]
    )[:TABLE_ROWS]
    rows = [("cell", "verdict", "delta", "interval", "coverage", "threshold")] + [
        (c.id, c.verdict, f"{signed_pct(c.delta_pct)} %",
         f"[{signed_pct(c.ci_pct[0])}, {signed_pct(c.ci_pct[1])}] %",
         f"{100 * c.ci_coverage:.1f} %", f"±{c.threshold_pct:.2f} %") for c in shown]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    # Words to the left, numbers to the right, so their signs and units line up.
    lines = ["  ".join(text.ljust(width) if i < 2 else text.rjust(width)
                       for i, (text, width) in enumerate(zip(row, widths, strict=True)))
             .rstrip() for row in rows]
    listed = {c.id for c in shown}
    hidden = Counter(c.verdict for c in cells if c.id not in listed)
    if hidden:
        counts = ", ".join(f"{verdict} {n}" for verdict, n in hidden.items())
        lines.append(f"... {counted(hidden.total(), 'more cell')} in report.md ({counts})")
    return lines


def closing_lines(report: AbReport) -> list[str]:
    """What `ab` (finished or interrupted) and `summarize` say on stderr once the report is
    written: the verdicts and the false calls to expect, the switch check's note, why the
    intervals are weak when the rounds were too few for 95 %, how far the A/A floor
    widened `same`, the cells left without a
    verdict, and a line per failed variant."""
    summary = report.summary
    counts = ", ".join(f"{name} {count}" for name, count in summary.verdicts.items())
    lines = [f"verdicts: {counts} (of {counted(summary.cells, 'cell')}); false faster/slower "
             f"calls to expect with no effect at all: at most {summary.expected_false_calls:.2f}"]
    if report.switch_note:
        lines.append(report.switch_note)
    warning = where_measured(report).warning
    if warning:
        lines.append(f"warning: {warning}")
    if summary.interval_note:
        lines.append(f"note: {summary.interval_note}")
    raised = raised_threshold_note(report)
    if raised:
        lines.append(f"note: {raised}")
    if summary.unjudged_cells:
        lines.append(f"no verdict (no round measured by every side): "
                     f"{', '.join(summary.unjudged_cells)}")
    return lines + failure_lines(report)


def failure_lines(report: AbReport) -> list[str]:
    """A line per failed variant, with a failure's reason: what `ab` and `summarize` print
    on stderr, report.md holding every failed cell run. The example is a run that failed
    of itself where there is one: the other sides of an interleaved round only say that
    it left them nothing to time ("not timed: side B could not prepare the cell")."""
    lines = []
    for variant, rounds in report.failed_variants.items():
        failed = [f for f in report.failed_runs if f.variant == variant]
        cause = next((f for f in failed if NOT_TIMED not in f.reason), failed[0])
        lines.append(f"failed: {variant} in {labelled('round', rounds)}, "
                     f"{counted(len(failed), 'failure')}, e.g. {cause.run}: {cause.reason}; "
                     "its cells are judged without those rounds")
    return lines
