"""Figures from results: each figure name is drawn by the module the registry names.

`spec.figures.FIGURES` gives each figure its drawings: a module here (`gemm`, `ccl`,
`generic`) and the benches it fits; the results' bench picks the drawing, whose module is
imported only when one of its figures is asked for. A renderer module offers
`figure_data(results, name)` (the JSON-able data a figure shows) and `draw(data)`; each
figure is written as `<name>.png` with its data as `<name>.json`, the golden output
(docs/adr/0050-figures-from-results.md). Nothing here imports torch: fast mode redraws
committed results on a machine without it.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from kernbench.errors import UserError
from kernbench.execute.lifetime import die_with_parent
from kernbench.render import style
from kernbench.results import atomic
from kernbench.results.build import describe
from kernbench.results.model import Results
from kernbench.results.reference import Reference
from kernbench.spec.figures import (
    FIGURE_NAMES,
    BenchFacts,
    figures_drawn_by,
    figures_of,
    renderer_for,
)

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

__all__ = ["figure_data", "figures_drawn_by", "render_results", "requested_figures"]


def render_results(
    results: Results,
    out_dir: Path,
    figures: Sequence[str] | None = None,
    parallel: bool = False,
    references: Sequence[Reference] = (),
) -> list[Path]:
    """Draw the figures (default: the bench's `figures`) into out_dir; return the PNGs.

    Each is written as `<name>.png` with its plotted data as `<name>.json`. With
    `parallel`, each figure is drawn in a forked process of its own; with `references`,
    figures that can show other tools' numbers show them (the collective ones).
    """
    names = requested_figures(results, figures)
    out_dir = Path(out_dir)
    if parallel and len(names) > 1 and _forkable() and not references:
        return _render_in_parallel(results, out_dir, names)
    return [_draw(results, name, out_dir, references) for name in names]


def _draw(
    results: Results, name: str, out_dir: Path, references: Sequence[Reference] = ()
) -> Path:
    """One figure, or one line saying why not: results come from files, and a value no
    figure can show (a size of zero on a log axis, a text for a number) is no traceback."""
    try:
        module = renderer(results, name)  # the name was checked by requested_figures
        data = module.figure_data(results, name)
        if references and hasattr(module, "with_references"):
            data = module.with_references(data, references)
        return style.save_figure(data, module.draw, out_dir, name)
    except UserError:
        raise
    except OSError as exc:
        raise UserError(f"figure {name}: cannot write into {out_dir}: "
                        f"{exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - any value of the results may reach a renderer
        raise UserError(f"figure {name}: cannot be drawn from these results: "
                        f"{describe(exc)}") from None


def _forkable() -> bool:
    return (os.cpu_count() or 1) > 1 and "fork" in multiprocessing.get_all_start_methods()


def _render_in_parallel(results: Results, out_dir: Path, names: list[str]) -> list[Path]:
    """One forked process per figure, all at once: a big sweep's figures take seconds each
    in matplotlib's layout, and fast mode is meant to take seconds in all. Forked children
    share the loaded results instead of pickling them."""
    context = multiprocessing.get_context("fork")
    children = [
        context.Process(target=_draw_in_child, args=(results, out_dir, name, os.getpid()))
        for name in names
    ]
    try:
        with _signals_held():
            for child in children:
                child.start()
        for child in children:
            child.join()
    finally:  # a Ctrl-C or TERM: no drawer goes on writing after the command ended
        for name, child in zip(names, children, strict=True):
            if child.is_alive():
                child.kill()
                child.join()
                for drawn in (f"{name}.png", f"{name}.json"):  # nor half a file behind
                    atomic.remove_temporaries_of(out_dir / drawn)
    failed = [name for name, child in zip(names, children, strict=True) if child.exitcode != 0]
    if failed:  # draw them here, so their error surfaces as it would without the fork
        render_results(results, out_dir, failed[:1])
    return [out_dir / f"{name}.png" for name in names]


@contextmanager
def _signals_held() -> Iterator[None]:
    """A Ctrl-C, TERM or HUP that comes as the drawers are forked is taken once they all
    are: taken in a fork, it raises inside CPython's at-fork hooks, which print it as
    "Exception ignored" and drop it, and the command goes on as if none had come."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread takes signals, or sets their handlers
        return
    came: list[int] = []
    before = {signum: signal.signal(signum, lambda number, _: came.append(number))
              for signum in _STOP_SIGNALS
              if signal.getsignal(signum) is not None}  # None: set outside Python, kept
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    for held in came[:1]:
        signal.raise_signal(held)  # to the handler it was meant for


def _draw_in_child(results: Results, out_dir: Path, name: str, parent_pid: int) -> None:
    # A failure is drawn again in the parent, which says why in one line; the child
    # exits quietly instead of printing its traceback.
    die_with_parent(parent_pid)  # a kill -9 of the command ends its drawers too
    try:
        _draw(results, name, out_dir)
    except BaseException:  # noqa: BLE001
        os._exit(1)


def figure_data(results: Results, name: str) -> dict[str, Any]:
    """The data one figure plots, as plain JSON-able values (the golden-test output)."""
    requested_figures(results, [name])
    data: dict[str, Any] = renderer(results, name).figure_data(results, name)
    return data


def bench_facts(results: Results) -> BenchFacts:
    """What picks a figure's drawing, read from the results' bench and cells."""
    spec = results.spec
    return BenchFacts.of(
        str(spec.get("kernel", "")), str(spec.get("model", "none")), spec.get("metrics") or {},
        (cell.params for cell in results.cells), spec.get("rates") or (),
    )


def requested_figures(results: Results, figures: Sequence[str] | None) -> list[str]:
    """The figure names to draw, checked and without repeats, in the order given."""
    names = figures_of(results.spec) if figures is None else list(figures)
    unknown = [name for name in names if name not in FIGURE_NAMES]
    if unknown:
        raise UserError(f"unknown figure {unknown[0]!r}; known: {', '.join(FIGURE_NAMES)}")
    return list(dict.fromkeys(names))


def renderer(results: Results, name: str) -> ModuleType:
    """The module that draws figure `name` of these results, imported now (matplotlib
    comes with it)."""
    owner = renderer_for(name, bench_facts(results))
    module = f"kernbench.render.{owner}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise UserError(
            f"figures {', '.join(figures_drawn_by(owner))} need {module}, "
            "which is missing"
        ) from None
