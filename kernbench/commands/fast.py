"""`kernbench run --fast`: a bench's figures redrawn from its committed data; no kernel runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from kernbench.commands.run_checks import check_fast_out
from kernbench.errors import EXIT_OK, UserError
from kernbench.results import model as results_io
from kernbench.spec.data_file import committed_data, data_error
from kernbench.spec.drift import spec_drift
from kernbench.spec.models import Bench
from kernbench.spec.yaml_document import shown_path
from kernbench.units import counted

FIGURES_DIR = "figures"  # fast mode's only output, in --out


def render_fast(bench: Bench, bench_path: Path, out: Path) -> int:
    """Redraw the figures from the bench's committed data file; runs no kernel."""
    from kernbench.render import render_results

    data_path = committed_data(bench, bench_path)
    try:
        results = results_io.load(data_path)
    except UserError as exc:
        raise data_error(bench_path, exc.message) from None
    if results.bench != bench.name:
        raise data_error(bench_path,
                         f"{data_path.name} holds bench {results.bench!r}, not {bench.name!r}")
    if not any(cell.summary is not None for cell in results.cells):
        raise data_error(bench_path, f"{shown_path(data_path)} holds no measured cell: "
                         "nothing to draw")
    drifted = spec_drift(results.spec, bench.model_dump(mode="json"))
    if drifted:
        print(f"note: {bench_path.name}'s {', '.join(drifted)} changed since {data_path.name} "
              "was measured; re-run the bench to refresh it", file=sys.stderr)
    check_fast_out(out, FIGURES_DIR)
    made = [folder for folder in (out, *out.parents) if not folder.exists()]
    try:
        written = render_results(results, out / FIGURES_DIR, bench.figures or None,
                                 parallel=True)
    except BaseException:
        _remove_made(made)
        raise
    print(f"{bench.name}: fast mode, {counted(len(written), 'figure')} from "
          f"{shown_path(data_path)}")
    for path in written:
        print(f"  {path}")
    return EXIT_OK


def _remove_made(made: list[Path]) -> None:
    """A fast mode that drew nothing leaves no folder behind: the folders it made (`out`
    and the parents that were not there, deepest first), with what it wrote in them."""
    if made:
        shutil.rmtree(made[0], ignore_errors=True)
    for folder in made[1:]:
        try:
            folder.rmdir()
        except OSError:
            return  # not empty: another's now

