"""The metrics a bench's model reads, and those kernbench computes. `model: roofline`
compares `flops` with the peak rate and `bytes` with memory bandwidth; a bench that defines
neither, or misspells one (`flop`, `byte`), would run with no TFLOP/s, GB/s or roofline,
and say nothing. A count the bench lists under `rates:` gets its rate per second too."""

from __future__ import annotations

import difflib

from kernbench.spec.figures import RATE_METRICS
from kernbench.spec.models import Bench

# Each model's metrics, of which a bench must define at least one. alpha_beta reads the
# cells' `op` and `bytes` parameters, which the figure checks ask for, not a metric.
MODEL_METRICS: dict[str, tuple[str, ...]] = {"roofline": RATE_METRICS}
# How close a metric's name must be to one the model reads to be taken for a misspelling.
NEAR_MISS = 0.85
# The metrics kernbench computes from a cell's time and the bench's flops and bytes
# (analyze/metrics.py): a bench metric of one of these names would be replaced by it.
COMPUTED_METRICS = ("time_s", "tflops", "gbs", "intensity", "util", "model_time_s",
                    "model_util", "algbw_gbs", "busbw_gbs")
# A `rates:` metric's rate per second is stored as NAME + this (`elements_per_s`).
RATE_SUFFIX = "_per_s"
# The per-call metric a rate is computed from: a bench that names the rate itself most
# likely meant to give that (`gbs: 2*n*itemsize` for `bytes: 2*n*itemsize`).
RATE_SOURCES = {"gbs": "bytes", "algbw_gbs": "bytes", "busbw_gbs": "bytes", "tflops": "flops",
                "util": "flops"}


def model_metrics_problem(bench: Bench) -> tuple[tuple[str, ...], str] | None:
    """A problem at `metrics` (field path, message), or None."""
    read = MODEL_METRICS.get(bench.model, ())
    absent = [name for name in read if name not in bench.metrics]
    meant = {name: _near_miss(name, absent) for name in bench.metrics}
    misspelt = {name: right for name, right in meant.items() if right is not None}
    if len(absent) == len(read) and read:
        return ("metrics",), _none_defined(bench.model, read, misspelt)
    if not misspelt:
        return None
    name, right = next(iter(misspelt.items()))
    message = f"model {bench.model} reads {right!r}, not {name!r}: did you mean {right!r}?"
    return ("metrics", name), message


def rate_name(count: str) -> str:
    """The metric a `rates:` count's rate per second is stored as."""
    return count + RATE_SUFFIX


def counts_of(bench: Bench) -> set[str]:
    """The bench's metrics that count work per call: flops, bytes and its `rates:`. None of
    them may be negative (a negative rate); its other metrics are its own to define."""
    return {*RATE_METRICS, *bench.rates}


def rates_problem(bench: Bench) -> tuple[tuple[str, ...], str] | None:
    """A `rates:` entry that names no metric of the bench, one that has its rate already,
    or one named twice."""
    for index, name in enumerate(bench.rates):
        field = ("rates", str(index))
        if name in RATE_METRICS:
            shown = "TFLOP/s" if name == "flops" else "GB/s"
            return field, f"{name!r} is always rated ({shown}); list only other metrics"
        if name not in bench.metrics:
            known = ", ".join(bench.metrics) or "none"
            return field, f"{name!r} is not a metric of this bench; its metrics: {known}"
        if name in bench.rates[:index]:
            return field, f"{name!r} is listed twice"
    return None


def computed_metric_problem(bench: Bench) -> tuple[tuple[str, ...], str] | None:
    """A bench metric named as one kernbench computes, which the computed one would
    replace in the results without a word."""
    rates = {rate_name(count): count for count in bench.rates}
    name = next((name for name in bench.metrics if name in rates), None)
    if name is not None:
        return ("metrics", name), (f"{name!r} is the rate kernbench computes from "
                                   f"{rates[name]!r} (rates:), which would replace this "
                                   "one; name it otherwise")
    name = next((name for name in bench.metrics if name in COMPUTED_METRICS), None)
    if name is None:
        return None
    computed = ", ".join(COMPUTED_METRICS)
    source = RATE_SOURCES.get(name)
    advice = (f"give the {source} of one call as `{source}:` and kernbench computes {name}, "
              "or name it otherwise" if source and source not in bench.metrics
              else "name it otherwise")
    return ("metrics", name), (f"{name!r} is a metric kernbench computes ({computed}), "
                               f"which would replace this one; {advice}")


def _near_miss(name: str, absent: list[str]) -> str | None:
    close = difflib.get_close_matches(name.lower(), absent, n=1, cutoff=NEAR_MISS)
    return close[0] if close else None


def _none_defined(model: str, read: tuple[str, ...], misspelt: dict[str, str]) -> str:
    message = f"model {model} needs a {' or '.join(read)} metric and the bench defines none"
    if misspelt:
        guesses = ", ".join(f"{right!r} for {name!r}" for name, right in misspelt.items())
        message += f"; did you mean {guesses}?"
    return message
