"""What validate checks of an `op:` bench beyond its fields: the op and the reference
resolve, every name in its shapes, inits and arguments is a cell parameter, every keyword is
one the op takes and every one it needs is given, each input has a dtype, variants
choose only a known `backend`, and `check.outputs` names outputs the op and its reference
have, where what they return can be read without a call.

Like `checks.py`, each check gives the first problem as (field path, message), or None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kernbench.kernels import FactoryError, MissingExtra
from kernbench.kernels.backends import BACKENDS
from kernbench.kernels.callables import (
    keyword_names,
    known_outputs,
    required_names,
    resolve_callable,
)
from kernbench.kernels.tensors import INIT_DTYPE, read_init
from kernbench.spec import expr
from kernbench.spec.checks import Problem
from kernbench.spec.models import DERIVED_NAMES, Bench

VARIANT_OPTIONS = ("backend",)


def op_problem(bench: Bench, bench_dir: Path) -> Problem | None:
    """The first problem of an op bench, in the order a reader meets it; the op's and the
    reference's modules are looked for in `bench_dir` first."""
    assert bench.op is not None
    try:
        op = resolve_callable(bench.op, bench_dir)
    except MissingExtra:
        raise  # not a problem of the file: the loader says so
    except FactoryError as exc:
        return ("op",), str(exc)
    for problem in (
        _names(bench),
        _dtypes(bench),
        _keywords(bench, op),
        _variants(bench),
        _reference(bench, op, bench_dir),
    ):
        if problem is not None:
            return problem
    return None


def _expressions(bench: Bench) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every expression of the bench's shapes, inits and arguments, with its field path."""
    for name, spec in bench.inputs.items():
        for index, dimension in enumerate(spec.shape):
            if isinstance(dimension, str):
                yield ("inputs", name, "shape", str(index)), dimension
        for argument in read_init(spec.init).args:
            yield ("inputs", name, "init"), argument
    for key, value in bench.args.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str):
                yield ("args", key), item


def _names(bench: Bench) -> Problem | None:
    # dtype is a name, not a number: `itemsize` stands for it in arithmetic
    known = bench.parameter_names() - {*VARIANT_OPTIONS, "dtype"} | set(DERIVED_NAMES)
    for field, text in _expressions(bench):
        try:
            parsed = expr.parse(text)
        except expr.ExpressionError as exc:
            return field, str(exc)
        unknown = sorted(parsed.names - known)
        if unknown:
            return field, (
                f"unknown name {unknown[0]!r}; known: {', '.join(sorted(known)) or '(no axes)'}"
            )
    return None


def _dtypes(bench: Bench) -> Problem | None:
    has_dtype = "dtype" in bench.parameter_names()
    for name, spec in bench.inputs.items():
        kind = read_init(spec.init).kind
        if spec.dtype is None and kind not in INIT_DTYPE and not has_dtype:
            return ("inputs", name), "no dtype: give one here or a `dtypes` list"
    return None


def _keywords(bench: Bench, op: object) -> Problem | None:
    for name in bench.inputs:
        if name in bench.args:
            return ("args", name), f"{name!r} is an input too; give it once"
    takes = keyword_names(op)  # type: ignore[arg-type]
    listed = ", ".join(sorted(takes or ())) or "no keywords"
    for section, names in (("inputs", bench.inputs), ("args", bench.args)):
        for name in names:
            if takes is not None and name not in takes:
                return (section, name), f"{bench.op} takes no {name!r}; it takes {listed}"
    missing = sorted(required_names(op) - set(bench.inputs) - set(bench.args))  # type: ignore[arg-type]
    if missing:
        return ("op",), f"{bench.op} needs {missing[0]!r}; neither `inputs` nor `args` gives it"
    return None


def _variants(bench: Bench) -> Problem | None:
    for variant, options in bench.variants.items():
        for option, value in options.items():
            if option not in VARIANT_OPTIONS:
                message = (
                    f"an op bench's variants set only {', '.join(VARIANT_OPTIONS)}; "
                    "give the op's keywords under `args`"
                )
                return ("variants", variant, option), message
            if value not in BACKENDS:
                return (
                    ("variants", variant, option),
                    f"unknown backend {value!r}; known: {', '.join(BACKENDS)}",
                )
    return None


def _reference(bench: Bench, op: Callable[..., Any], bench_dir: Path) -> Problem | None:
    if bench.check is None:
        return None
    try:
        reference = resolve_callable(bench.check.ref, bench_dir)
    except FactoryError as exc:
        return ("check", "ref"), str(exc)
    takes = keyword_names(reference)
    missing = sorted((set(bench.inputs) | set(bench.args)) - (takes or set()))
    if takes is not None and missing:
        listed = ", ".join(sorted(takes)) or "no keywords"
        message = (
            f"the reference gets the op's keywords, but takes no {missing[0]!r}; it takes {listed}"
        )
        return ("check", "ref"), message
    needed = sorted(required_names(reference) - set(bench.inputs) - set(bench.args))
    if needed:
        return ("check", "ref"), (f"the reference gets the op's keywords, but needs "
                                  f"{needed[0]!r}, which neither `inputs` nor `args` gives")
    return _outputs(bench, ((bench.op or "", op), (bench.check.ref, reference)))


def _outputs(bench: Bench, callables: tuple[tuple[str, Callable[..., Any]], ...]) -> Problem | None:
    """Each output `check.outputs` names exists in what the op and the reference return
    (left to the cell where that cannot be read: an op without annotations)."""
    assert bench.check is not None
    for path, func in callables:
        returns = known_outputs(func)
        for index, selector in enumerate(bench.check.outputs):
            if returns is not None and not returns.has(selector):
                message = f"{path} returns {returns}; it has no output {selector!r}"
                return ("check", "outputs", str(index)), message
    return None
