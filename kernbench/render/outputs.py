"""What kernbench writes beside its JSON: one registry of writers per kind of output.

A run's writers take its results and its folder; an A/B's take its report and folder.
Each returns the paths it wrote. Adding an output format (CSV, HTML, ...): its writer in
a module of this package, and a line in the registry here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from kernbench.render import render_results
from kernbench.render.ab import AB_FIGURE, draw_ab_figure
from kernbench.render.ab_report import render_markdown
from kernbench.render.export import write_csv
from kernbench.render.report import write_ab_html, write_report
from kernbench.results import atomic
from kernbench.results.ab import AbReport
from kernbench.results.kinds import REPORT_MD
from kernbench.results.model import Results

RunWriter = Callable[[Results, Path], list[Path]]
AbWriter = Callable[[AbReport, Path], list[Path]]

def write_figures(results: Results, folder: Path) -> list[Path]:
    """The bench's figures, in `figures/`."""
    return render_results(results, Path(folder) / "figures", parallel=True)


def write_ab_figure(report: AbReport, folder: Path) -> list[Path]:
    path = Path(folder) / AB_FIGURE
    if draw_ab_figure(report, path) is None:
        path.unlink(missing_ok=True)  # no stale figure outlives a report without one
        return []
    return [path]


def write_ab_markdown(report: AbReport, folder: Path) -> list[Path]:
    path = Path(folder) / REPORT_MD
    figure = AB_FIGURE if (Path(folder) / AB_FIGURE).is_file() else None
    atomic.write_text(path, render_markdown(report, figure))
    return [path]


# In order: the report embeds the figures drawn before it.
RUN_WRITERS: dict[str, RunWriter] = {
    "figures": write_figures, "csv": write_csv, "report": write_report,
}
# In order: the report links the figure when there is one.
AB_WRITERS: dict[str, AbWriter] = {
    "figure": write_ab_figure, "markdown": write_ab_markdown, "html": write_ab_html,
}


def write_run_outputs(
    results: Results, folder: Path, skip: Sequence[str] = ()
) -> list[Path]:
    return [path for name, write in RUN_WRITERS.items() if name not in skip
            for path in write(results, folder)]


def write_ab_outputs(report: AbReport, folder: Path) -> list[Path]:
    return [path for write in AB_WRITERS.values() for path in write(report, folder)]
