"""The figure registry: each figure a bench may name, the benches it fits, and the module
of kernbench.render that draws it.

A figure has one or more drawings, tried in order: the first whose bench fits draws it.
`throughput` of a GEMM bench is TFLOP/s per M×N×K shape; of any other bench with a flops
or bytes metric, or a count under `rates:`, the rate over its axis. `validate` refuses a
figure none of whose drawings fits (`analyze/checks.py`); rendering a results file picks
the drawing the same way, and falls back to the first drawing for results whose bench was
never checked.

Adding a figure: a line in `FIGURES`, and its data function in the renderer's `FIGURE_DATA`
(docs/adr/0052-figures-that-fit-the-bench.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

COLLECTIVE_KERNEL = "collective"
COLLECTIVE_MODEL = "alpha_beta"
GEMM_PARAMETERS = ("M", "N", "K")
COLLECTIVE_PARAMETERS = ("op", "bytes")
RATE_METRICS = ("flops", "bytes")


@dataclass(frozen=True)
class BenchFacts:
    """What decides which figures fit a bench, read alike from a bench and its plan or from
    a results file: its kernel, its model, the metrics it declares, those of them it lists
    under `rates:`, and the parameters that every one of its cells has."""

    kernel: str
    model: str
    metrics: frozenset[str]
    params: frozenset[str]
    rates: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        kernel: str,
        model: str,
        metrics: Iterable[str],
        cell_params: Iterable[Mapping[str, Any]],
        rates: Iterable[str] = (),
    ) -> BenchFacts:
        shared: set[str] | None = None
        for params in cell_params:
            shared = set(params) if shared is None else shared & set(params)
        return cls(kernel, model, frozenset(metrics), frozenset(shared or ()), frozenset(rates))

    @property
    def collective(self) -> bool:
        return self.kernel == COLLECTIVE_KERNEL or self.model == COLLECTIVE_MODEL


# What a bench lacks for a drawing, said after "this bench", or None when it fits.
Lack = Callable[[BenchFacts], str | None]


@dataclass(frozen=True)
class Drawing:
    """One way to draw a figure: the renderer module, and what the bench must have."""

    renderer: str
    needs: str
    lack: Lack


def _missing(facts: BenchFacts, names: Iterable[str]) -> str | None:
    missing = [name for name in names if name not in facts.params]
    return f"has cells without {', '.join(missing)}" if missing else None


def _gemm_lack(facts: BenchFacts) -> str | None:
    return _missing(facts, GEMM_PARAMETERS)


def _collective_lack(facts: BenchFacts) -> str | None:
    if not facts.collective:
        return f"has kernel {facts.kernel!r} and model {facts.model!r}"
    return _missing(facts, COLLECTIVE_PARAMETERS)


def _rate_lack(facts: BenchFacts) -> str | None:
    if facts.metrics & set(RATE_METRICS) or facts.rates:
        return None
    return "declares no flops or bytes metric and lists no count under rates"


def _memory_lack(facts: BenchFacts) -> str | None:
    if "bytes" not in facts.metrics:
        return "declares no bytes metric"
    if facts.collective:
        # A collective's bytes cross the interconnect, not the device's memory.
        return "is a collective, whose bytes cross the interconnect (busbw draws them)"
    return None


def _no_lack(facts: BenchFacts) -> str | None:
    return None


GEMM = Drawing("gemm", "cells with M, N, K (a GEMM shape)", _gemm_lack)
COLLECTIVE = Drawing(
    "ccl",
    "a collective bench (kernel: collective or model: alpha_beta) whose cells have op and bytes",
    _collective_lack,
)
RATE = Drawing("generic", "a flops or bytes metric, or a count under rates", _rate_lack)
ANY = Drawing("generic", "nothing", _no_lack)
MEMORY = Drawing("generic", "a bytes metric, on a bench that is not a collective", _memory_lack)

FIGURES: dict[str, tuple[Drawing, ...]] = {
    "throughput": (GEMM, RATE),
    "utilization": (GEMM,),
    "theory_vs_measured": (GEMM,),
    "stage_breakdown": (GEMM,),
    "busbw": (COLLECTIVE,),
    "latency": (COLLECTIVE,),
    "time": (ANY,),
    "bandwidth": (MEMORY,),
}
FIGURE_NAMES = tuple(FIGURES)
# What a bench that names no figures gets: `time` fits every bench.
DEFAULT_FIGURES = ("time",)


def figures_of(spec: Mapping[str, Any]) -> list[str]:
    """The figures a bench (as a results file records it) draws: those it names, else the
    default ones."""
    return list(spec.get("figures") or DEFAULT_FIGURES)


def misfit(name: str, facts: BenchFacts) -> str | None:
    """Why figure `name` fits none of its drawings on this bench, or None when it fits."""
    drawings = FIGURES[name]
    lacks = [drawing.lack(facts) for drawing in drawings]
    if any(lack is None for lack in lacks):
        return None
    needs = " or ".join(drawing.needs for drawing in drawings)
    return f"figure {name!r} needs {needs}; this bench {' and '.join(map(str, lacks))}"


def renderer_for(name: str, facts: BenchFacts) -> str:
    """The module drawing `name` for this bench: the first drawing that fits, else the
    first (results written before figures were checked are drawn as they always were)."""
    drawings = FIGURES[name]
    return next((d.renderer for d in drawings if d.lack(facts) is None), drawings[0].renderer)


def figures_drawn_by(module: str) -> tuple[str, ...]:
    """The figure names one renderer module draws for some bench."""
    return tuple(
        name for name, drawings in FIGURES.items() if any(d.renderer == module for d in drawings)
    )
