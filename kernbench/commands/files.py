"""The commands that read saved files: collect, render, report, export, compare, merge.

Typer functions only, registered by `kernbench.cli`; each delegates to its core. Their
cores import matplotlib or scipy, so each imports it when called.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from kernbench.commands.ab_options import FAIL_ON_CHOICES
from kernbench.commands.numbers import check_min_effect
from kernbench.results import atomic
from kernbench.results import model as results_io
from kernbench.results.outpaths import out_file, out_folder
from kernbench.spec.ab_model import DEFAULT_MIN_EFFECT, GATE_MIN_ROUNDS, MIN_EFFECT_MAX
from kernbench.units import counted


def collect_command(
    folder: Annotated[Path, typer.Argument(help="A run folder (holding run.json).")],
) -> None:
    """Rebuild a run's results.json, report and figures from its journal; runs nothing."""
    from kernbench.commands.collect import collect

    raise typer.Exit(collect(folder))


def render_command(
    results: Annotated[Path, typer.Argument(help="A results file, or a run folder.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for the figures; default: figures/ "
                                  "beside the results file, or in the run folder.")
    ] = None,
    reference: Annotated[
        list[Path] | None, typer.Option("--reference", help="Another tool's times (a "
                                        "reference file, e.g. from scripts/nccl_compare.py) "
                                        "drawn beside the collective figures' series; "
                                        "repeatable, one marker shape each.")
    ] = None,
) -> None:
    """Draw the figures of a results file (no kernel runs, no torch import)."""
    from kernbench.render import render_results
    from kernbench.results.reference import load_reference

    loaded = results_io.load(results)
    references = [load_reference(path) for path in reference or []]
    for path in render_results(loaded, out_folder(out or _beside(results) / "figures"),
                               references=references):
        typer.echo(str(path))


def export_command(
    results: Annotated[Path, typer.Argument(help="A results file (.json, .json.xz or "
                                             ".json.gz), or a run folder.")],
    fmt: Annotated[
        str, typer.Option("--format", help="csv or json (a row per cell and round), or bench "
                          "(CI trackers' name/unit/value list).")
    ] = "csv",
    metric: Annotated[
        str | None, typer.Option("--metric", help="bench only: report this metric instead "
                                 "of the median time (each entry's extra says whether smaller "
                                 "or bigger is better).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="File to write; default: standard output.")
    ] = None,
) -> None:
    """Flatten a results file for pandas or a CI benchmark tracker."""
    from kernbench.render.export import export  # matplotlib, through the render package

    if out is not None:
        out_file(out, create=False)
    text = export(results_io.load(results), fmt, metric, source=results)
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic.write_text(out_file(out), text)
        typer.echo(f"wrote {out}")


def compare_command(
    base: Annotated[Path, typer.Argument(help="The results (file or run folder) to compare "
                                         "against.")],
    new: Annotated[Path, typer.Argument(help="The results under test (file or run folder).")],
    min_effect: Annotated[
        float, typer.Option("--min-effect", callback=check_min_effect, help="Smallest effect "
                            f"worth a call, % (0 to {MIN_EFFECT_MAX:g}).")
    ] = DEFAULT_MIN_EFFECT,
    fail_on: Annotated[
        str | None, typer.Option("--fail-on", help=f"{FAIL_ON_CHOICES}: exit 1 when a "
                                 "cell is called so (a CI gate; needs "
                                 f"{GATE_MIN_ROUNDS} rounds or more in each run); slower and "
                                 "any also when a cell measured in BASE failed in NEW.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for compare.md and compare.json.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Compare runs of other benches or devices too.")
    ] = False,
) -> None:
    """Compare two saved runs cell by cell: faster, slower, same or unstable."""
    from kernbench.commands.compare import compare_runs  # scipy, through the statistics

    text, code = compare_runs(base, new, min_effect, fail_on, out, force)
    typer.echo(text, nl=False)
    raise typer.Exit(code)


def merge_command(
    parts: Annotated[list[Path], typer.Argument(help="results.json of each shard.")],
    out: Annotated[Path, typer.Option("--out", help="The merged results file to write.")],
    figures: Annotated[
        bool, typer.Option("--figures/--no-figures", help="Draw the figures beside it.")
    ] = True,
) -> None:
    """Join the results of a sharded sweep (`run --shard I/N`) into one file."""
    from kernbench.render import render_results
    from kernbench.results.merge import (  # scipy: statistics
        check_merge_out,
        merge_results,
        mixed_provenance,
    )

    check_merge_out(out, parts)
    merged = merge_results(parts)
    results_io.save(merged, out)
    typer.echo(f"wrote {out}: {counted(len(merged.cells), 'cell')} from "
               f"{counted(len(parts), 'file')}")
    mixed = mixed_provenance(merged)
    if mixed:
        typer.echo(mixed, err=True)
    if figures:
        render_results(merged, out.parent / "figures", parallel=True)


def report_command(
    source: Annotated[Path, typer.Argument(help="A run folder, or a results file.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for report.md and report.html; "
                                  "default: the run folder, or beside the results file.")
    ] = None,
) -> None:
    """Write report.md and a self-contained report.html of a run."""
    from kernbench.render.report import report_results  # matplotlib, for missing figures

    if out is not None:
        out_folder(out, create=False)
    loaded = results_io.load(source)
    for written in report_results(loaded, out_folder(out or _beside(source))):
        typer.echo(str(written))


def _beside(source: Path) -> Path:
    """Where a report or figures/ goes by default: in the run folder, or beside the results
    file."""
    return source if source.is_dir() else source.parent


COMMANDS: dict[str, Callable[..., None]] = {
    "collect": collect_command,
    "render": render_command,
    "report": report_command,
    "export": export_command,
    "compare": compare_command,
    "merge": merge_command,
}
