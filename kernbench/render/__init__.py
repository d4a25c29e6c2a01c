"""Figures from results: pick the renderer for each requested figure name.

GEMM figures are drawn by `render.gemm`; collective figures (busbw, latency) by
`render.ccl`, imported only when asked for. Each writes `<name>.png` and the data it
plotted as `<name>.json`, the golden output (docs/adr/0050-figures-from-results.md).
Nothing here imports torch: fast mode redraws committed results on a machine without it.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from kernbench.errors import UserError
from kernbench.render.gemm import GEMM_FIGURES, gemm_figure_data, render_gemm
from kernbench.results.model import Results
from kernbench.spec.models import FIGURES

# Every figure a bench may name that is not a GEMM one is drawn by render.ccl.
CCL_FIGURES = tuple(name for name in FIGURES if name not in GEMM_FIGURES)

__all__ = ["CCL_FIGURES", "GEMM_FIGURES", "figure_data", "render_results", "requested_figures"]


def render_results(
    results: Results,
    out_dir: Path,
    figures: Sequence[str] | None = None,
    parallel: bool = False,
) -> list[Path]:
    """Draw the figures (default: the bench's `figures`) into out_dir; return the PNGs.

    GEMM figures are written as `<name>.png` with their plotted data as `<name>.json`.
    With `parallel`, each figure is drawn in a forked process of its own.
    """
    names = requested_figures(results, figures)
    out_dir = Path(out_dir)
    if parallel and len(names) > 1 and _forkable():
        return _render_in_parallel(results, out_dir, names)
    written = render_gemm(results, out_dir, [n for n in names if n in GEMM_FIGURES])
    collective = [name for name in names if name in CCL_FIGURES]
    if collective:
        written += _ccl().render_ccl(results, out_dir, collective)
    return written


def _forkable() -> bool:
    return (os.cpu_count() or 1) > 1 and "fork" in multiprocessing.get_all_start_methods()


def _render_in_parallel(results: Results, out_dir: Path, names: list[str]) -> list[Path]:
    """One forked process per figure, all at once: a big sweep's figures take seconds each
    in matplotlib's layout, and fast mode is meant to take seconds in all. Forked children
    share the loaded results instead of pickling them."""
    context = multiprocessing.get_context("fork")
    children = [
        context.Process(target=render_results, args=(results, out_dir, [name]))
        for name in names
    ]
    for child in children:
        child.start()
    failed = []
    for name, child in zip(names, children, strict=True):
        child.join()
        if child.exitcode != 0:
            failed.append(name)
    if failed:  # draw them here, so their error surfaces as it would without the fork
        render_results(results, out_dir, failed[:1])
    return [out_dir / f"{name}.png" for name in names]


def figure_data(results: Results, name: str) -> dict[str, Any]:
    """The data one figure plots, as plain JSON-able values (the golden-test output)."""
    requested_figures(results, [name])
    if name in GEMM_FIGURES:
        return gemm_figure_data(results, name)
    return _ccl().ccl_figure_data(results, name)


def requested_figures(results: Results, figures: Sequence[str] | None) -> list[str]:
    """The figure names to draw, checked and without repeats, in the order given."""
    names = list(results.spec.get("figures", [])) if figures is None else list(figures)
    unknown = [name for name in names if name not in FIGURES]
    if unknown:
        raise UserError(f"unknown figure {unknown[0]!r}; known: {', '.join(FIGURES)}")
    return list(dict.fromkeys(names))


def _ccl() -> ModuleType:
    try:
        return importlib.import_module("kernbench.render.ccl")
    except ModuleNotFoundError as exc:
        if exc.name != "kernbench.render.ccl":
            raise
        raise UserError(
            f"figures {', '.join(CCL_FIGURES)} need kernbench.render.ccl, which is missing"
        ) from None
