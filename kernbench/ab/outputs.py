"""Write an A/B folder's outputs (ab.json, then the render registry's), and rebuild them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernbench.ab.analysis import analyze
from kernbench.ab.outcomes import finished_rounds, load_outcomes, load_turns
from kernbench.ab.schedule import MANIFEST_NAME, load_manifest
from kernbench.errors import UserError
from kernbench.execute.lock import folder_lock
from kernbench.render.outputs import write_ab_outputs
from kernbench.results.ab import AB_FORMAT, AbReport
from kernbench.results.kinds import AB_JSON_NAME as AB_JSON


def is_ab_folder(folder: Path) -> bool:
    return (Path(folder) / MANIFEST_NAME).is_file()


def write_outputs(folder: Path, report: AbReport) -> None:
    """ab.json, then every output the render registry has for an A/B."""
    folder = Path(folder)
    AB_FORMAT.write(folder / AB_JSON, report)
    write_ab_outputs(report, folder)


def summarize_ab(folder: Path, min_effect: float | None = None) -> AbReport:
    """Rebuild ab.json, report.md and the figure from an A/B folder, running nothing.

    With the manifest's minimum effect this reproduces ab.json exactly. An A/B that was
    interrupted (killed, out of time) is judged on the rounds all its sides finished, and
    says so (with fewer than two, every cell is unstable but keeps its round's deltas);
    `kernbench ab --resume` runs the rest."""
    folder = Path(folder)
    manifest = load_manifest(folder)
    planned, finished = manifest.rounds, finished_rounds(folder, manifest)
    if finished < planned:
        manifest = manifest.model_copy(update={
            "rounds": finished, "max_rounds": None,
            "runs": [run for run in manifest.runs if run.round <= finished],
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


def load_report(folder: Path) -> AbReport:
    """A written ab.json, migrated to this kernbench's format."""
    path = Path(folder) / AB_JSON
    if not path.is_file():
        raise UserError(f"{folder}: no {AB_JSON}; run `kernbench summarize {folder}`")
    return AB_FORMAT.read(path)


def interrupted_line(folder: Path, report: AbReport) -> str | None:
    """What `summarize` says of an A/B that was interrupted, None of a finished one."""
    if report.planned_rounds is None:
        return None
    return (f"interrupted: {report.rounds} of {report.planned_rounds} rounds finished; "
            f"continue with: kernbench ab --resume {folder}")


def failure_lines(report: AbReport) -> list[str]:
    """A line per failed variant, with its first failure's reason: what `ab` and
    `summarize` print on stderr, report.md holding every failed cell run."""
    lines = []
    for variant, rounds in report.failed_variants.items():
        failed = [f for f in report.failed_runs if f.variant == variant]
        lines.append(f"failed: {variant} in round(s) {', '.join(map(str, rounds))}, "
                     f"{len(failed)} failure(s), e.g. {failed[0].run}: {failed[0].reason}; "
                     "its cells are judged without those rounds")
    return lines
