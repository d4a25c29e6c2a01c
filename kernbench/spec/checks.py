"""What a bench's models cannot see one field at a time: the cell count, the names its
metrics and exclusions use, parameters named as those the run sets, variant options that
would hide an axis, and the keywords its kernel factory takes.

Each check gives the first problem as (field path, message), or None; the loader adds
the file and the line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from kernbench.spec.models import MAX_CELLS, Bench, check_metrics

Field = tuple[str, ...]
Problem = tuple[Field, str]
# What the run sets in every cell, as exclusions and `--only` read it: neither an axis nor
# a variant option may set it.
SET_BY_THE_RUN = {
    "device": "'device' is set by the run (--device)",
    "variant": "'variant' names the cell's variant",
}


def bench_problem(bench: Bench) -> Problem | None:
    """The first problem of `bench` short of its kernel, in the order a reader meets it."""
    for check in (_cell_count, _metric_names, _exclusion_keys, _axis_names, _variant_options):
        problem = check(bench)
        if problem is not None:
            return problem
    return None


def _cell_count(bench: Bench) -> Problem | None:
    count = bench.cell_count_bound()
    if count <= MAX_CELLS:
        return None
    message = (
        f"{count} cells before exclusions, more than the {MAX_CELLS} a bench may have; "
        "split it or shorten an axis"
    )
    return (("axes",) if bench.axes else ()), message


def _metric_names(bench: Bench) -> Problem | None:
    errors = check_metrics(bench)
    return next(((("metrics", name), errors[name]) for name in bench.metrics if name in errors),
                None)


def _exclusion_keys(bench: Bench) -> Problem | None:
    known = bench.parameter_names() | {"variant", "device"}
    for index, rule in enumerate(bench.exclude):
        for key in rule:
            if key not in known:
                message = f"unknown parameter {key!r}; known: {', '.join(sorted(known))}"
                return ("exclude", str(index), key), message
    return None


def _axis_names(bench: Bench) -> Problem | None:
    """An axis parameter named as one the run sets would validate and then be replaced in
    every cell (a `device` axis becomes `cpu`): refused."""
    for name, axis in bench.axis_parameters().items():
        if name in SET_BY_THE_RUN:
            field = ("axes", axis) if axis in bench.axes else ("dtypes",)
            return field, f"{SET_BY_THE_RUN[name]}; an axis cannot set it"
    return None


def _variant_options(bench: Bench) -> Problem | None:
    """A variant option named like an axis parameter (or one the run sets) would replace
    the value in every cell while the cell ids still show the axis: refused."""
    axis_of = bench.axis_parameters()
    for variant, options in bench.variants.items():
        for option in options:
            if option in SET_BY_THE_RUN:
                message = f"{SET_BY_THE_RUN[option]}; a variant cannot set it"
            elif axis_of.get(option) == option:
                message = f"{option!r} is an axis; a variant option cannot override it"
            elif option in axis_of:
                message = (
                    f"{option!r} is set by the axis {axis_of[option]!r}; a variant option "
                    "cannot override it"
                )
            else:
                continue
            return ("variants", variant, option), message
    return None


def factory_problem(bench: Bench, factory: Callable[..., object]) -> Problem | None:
    """Every keyword the cells pass (axis parameters, variant options, `device`) must be
    one the factory takes, unless it takes `**kwargs`."""
    accepted = _keywords_taken(factory)
    if accepted is None:
        return None
    takes = f"{bench.kernel_name} takes {', '.join(sorted(accepted)) or 'no keywords'}"
    passed: list[tuple[str, Field]] = [
        (name, ("axes", axis) if axis in bench.axes else ("dtypes",))
        for name, axis in bench.axis_parameters().items()
    ]
    passed += [
        (option, ("variants", variant, option))
        for variant, options in bench.variants.items()
        for option in options
    ]
    passed.append(("device", ("kernel",)))
    return next(
        ((field, f"{name!r} is passed to every cell's kernel, but {takes}")
         for name, field in passed if name not in accepted),
        None,
    )


def _keywords_taken(factory: Callable[..., object]) -> set[str] | None:
    """The keyword parameters of `factory`, or None when it takes any (`**kwargs`) or its
    signature cannot be read."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name for p in parameters if p.kind in keyword}
