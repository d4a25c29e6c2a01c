"""What a bench's models cannot see one field at a time: the cell count, the names its
metrics, `rates` and exclusions use and the values its exclusions name, parameters named
as those the run sets, variant options that would hide an axis, and the keywords its
kernel factory takes, with the values its annotations admit.

Each check gives the first problem as (field path, message), or None; the loader adds
the file and the line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import PydanticUserError, TypeAdapter, ValidationError

from kernbench.kernels.callables import signature_keywords, signature_required
from kernbench.kernels.rules import OPTIONS_RULE, ask, module_rule
from kernbench.spec.cell_keys import (
    axis_field,
    axis_label,
    axis_values,
    known_keys,
    passed_values,
    taken,
)
from kernbench.spec.model_metrics import (
    computed_metric_problem,
    model_metrics_problem,
    rates_problem,
)
from kernbench.spec.models import MAX_CELLS, Bench, check_metrics

Field = tuple[str, ...]
Problem = tuple[Field, str]
# What the run sets in every cell, as exclusions and `--only` read it: neither an axis nor
# a variant option may set it.
SET_BY_THE_RUN = {
    "device": "'device' is set by the run (--device)",
    "variant": "'variant' names the cell's variant",
}
# The parameter the run itself reads of every cell, whatever its kernel: the cell runs on
# this many ranks (execute/rounds.py).
WORLD_SIZE = "world_size"
# `ab: {switch: variant}` (`kernbench ab --switch variant`): A and B run two variants.
VARIANT_SWITCH = "variant"


def world_size_of(params: Mapping[str, Any]) -> int:
    """The ranks a cell of `params` runs on: 1 unless it sets WORLD_SIZE, a count of ranks
    (`_world_sizes` refuses any other value)."""
    return int(params.get(WORLD_SIZE, 1))


def bench_problem(bench: Bench) -> Problem | None:
    """The first problem of `bench` short of its kernel, in the order a reader meets it."""
    for check in (_no_dtypes, _cell_count, _repeated_values, _world_sizes, _metric_names,
                  computed_metric_problem, model_metrics_problem, rates_problem,
                  _exclusion_keys, _exclusion_values, _axis_names, _shared_parameters,
                  _variant_options, _ab_variants, _ab_settings):
        problem = check(bench)
        if problem is not None:
            return problem
    return None


def _no_dtypes(bench: Bench) -> Problem | None:
    """`dtypes: []` is refused as an empty axis is (the model, which also reads recorded
    benches' `dtypes: []`, cannot tell it from no `dtypes`): it would run the default."""
    if "dtypes" in bench.model_fields_set and not bench.dtypes:
        return ("dtypes",), "an empty list: give at least one dtype, or leave `dtypes` out"
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


def _repeated_values(bench: Bench) -> Problem | None:
    """Two values of an axis (two rows of a zip group) written alike in cell ids would
    make two cells of one id: refused at the axis."""
    axes = bench.all_axes()
    zipped = {axis: group for group in bench.zip for axis in group}
    for axis, values in axes.items():
        group = zipped.get(axis, [axis])
        if group[0] != axis:
            continue
        first: dict[tuple[str, ...], int] = {}
        for index in range(len(values)):
            label = tuple(axis_label(axes[name][index]) for name in group)
            if label not in first:
                first[label] = index
                continue
            field = axis_field(bench, axis)
            if len(group) == 1:
                message = f"{label[0]} is given twice (values {first[label]} and {index})"
            else:
                row = ", ".join(f"{name}={text}" for name, text in zip(group, label, strict=True))
                message = (f"values {first[label]} and {index} of the zipped axes "
                           f"{', '.join(group)} are the same ({row})")
            return field, f"{message}: two cells of one id"
    return None


def _world_sizes(bench: Bench) -> Problem | None:
    """A cell runs on `world_size` ranks: a value that is not a count of ranks would
    validate and then stop the run at its launch."""
    for name, field, value in passed_values(bench):
        if name == WORLD_SIZE and (type(value) is not int or value < 1):
            message = f"a cell runs on world_size ranks: a whole number, at least 1 (got {value!r})"
            return field, message
    return None


def _metric_names(bench: Bench) -> Problem | None:
    errors = check_metrics(bench)
    return next(((("metrics", name), errors[name]) for name in bench.metrics if name in errors),
                None)


def _exclusion_keys(bench: Bench) -> Problem | None:
    known = known_keys(bench)
    for index, rule in enumerate(bench.exclude):
        for key in rule:
            if key not in known:
                message = f"unknown key {key!r}; known: {', '.join(sorted(known))}"
                return ("exclude", str(index), key), message
    return None


def _exclusion_values(bench: Bench) -> Problem | None:
    """A value an exclusion names that its key never takes excludes nothing, so a typo
    (`dtype: fp46`) would leave measured what the file says is dropped: refused."""
    if not bench.exclude:
        return None
    takes = taken(bench)
    for index, rule in enumerate(bench.exclude):
        for key, want in rule.items():
            named = takes.get(key)
            if named is None or any(isinstance(v, list) for v in named.values):
                continue  # a list-valued parameter compares whole lists: not checked here
            for wanted in want if isinstance(want, list) else [want]:
                if not named.matches(wanted):
                    shown = [*named.values, *named.labels]
                    more = f" and {len(shown) - 8} more" if len(shown) > 8 else ""
                    listed = ", ".join(repr(v) for v in shown[:8])
                    message = f"{wanted!r} is not a value {key} takes here ({listed}{more})"
                    return ("exclude", str(index), key), message
    return None


def _axis_names(bench: Bench) -> Problem | None:
    """An axis parameter named as one the run sets would validate and then be replaced in
    every cell (a `device` axis becomes `cpu`): refused."""
    for name, axis in bench.axis_parameters().items():
        if name in SET_BY_THE_RUN:
            return axis_field(bench, axis), f"{SET_BY_THE_RUN[name]}; an axis cannot set it"
    return None


def _shared_parameters(bench: Bench) -> Problem | None:
    """Two axes setting one parameter (an axis `n` and a mapping axis with a key `n`):
    the cell would get one axis's value while its id shows both; refused at the second."""
    setter: dict[str, str] = {}
    for passed in axis_values(bench):
        first = setter.setdefault(passed.parameter, passed.axis)
        if first != passed.axis:
            # A plain axis sets its parameter with every value: refused at the axis.
            plain = passed.key is None
            field = axis_field(bench, passed.axis) if plain else passed.field(bench)
            return field, (f"{passed.parameter!r} is set by the axis {first!r} too; a "
                           "parameter comes from one axis")
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


def unknown_ab_variant(bench: Bench, a: str | None, b: str | None) -> tuple[str, str] | None:
    """With switch `variant`: the side (`a` or `b`) that names none of the bench's
    variants (None, unset, names none), and the message; `validate` and `kernbench ab
    --a/--b` both ask."""
    for side, name in (("a", a), ("b", b)):
        if name not in bench.variants:
            shown = "null (unset)" if name is None else repr(name)
            return side, (f"{shown} is not a variant of bench {bench.name!r}; with switch "
                          f"{VARIANT_SWITCH}, a and b name two of: {', '.join(bench.variants)}")
    return None


def _ab_variants(bench: Bench) -> Problem | None:
    """An A/B of the variant names two of the bench's variants."""
    if bench.ab is None or bench.ab.switch != VARIANT_SWITCH:
        return None
    unknown = unknown_ab_variant(bench, bench.ab.a, bench.ab.b)
    if unknown is not None:
        return ("ab", unknown[0]), unknown[1]
    if bench.ab.a == bench.ab.b:
        return ("ab", "b"), f"a and b are both {bench.ab.a!r}; name two variants"
    return None


def _ab_settings(bench: Bench) -> Problem | None:
    """The `ab:` block's settings agree with one another (`kernbench ab` refused them only
    as the command-line options the user had not typed, and `validate` passed them)."""
    block = bench.ab
    if block is None:
        return None
    if block.a == block.b:
        shown = "null (unset)" if block.a is None else repr(block.a)
        return ("ab", "b"), f"a and b are both {shown}: the A/B would compare a side with itself"
    if block.max_rounds is not None and block.max_rounds < block.rounds:
        return ("ab", "max_rounds"), (f"{block.max_rounds} is below rounds ({block.rounds}): "
                                      "rounds are added past rounds, up to max_rounds")
    if block.turn_ms is not None and block.schedule == "sequential":
        return ("ab", "turn_ms"), ("the sequential schedule takes no turns (each side is a "
                                   "whole run); drop turn_ms, or use schedule: interleaved")
    return None


def factory_problem(bench: Bench, factory: Callable[..., object]) -> Problem | None:
    """The names the cells pass to the factory and those it needs, then the values (ADR
    0065), then what the factory's own rule says of each variant's options."""
    return (_keyword_problem(bench, factory) or _required_problem(bench, factory)
            or _value_problem(bench, factory) or _variant_rule_problem(bench, factory))


def _variant_rule_problem(bench: Bench, factory: Callable[..., object]) -> Problem | None:
    """A rule between options (gemm's `host` only with `backend: torch`): the factory's
    module may define `options_problem(options) -> str | None`, which is given each
    variant's options alone (docs/kernels.md); a problem is an error at the variant."""
    rule = module_rule(factory, OPTIONS_RULE)
    if rule is None:
        return None
    for variant, options in bench.variants.items():
        message = ask(rule, dict(options))
        if message:
            return ("variants", variant), f"{bench.kernel_name}: {message}"
    return None


def _keyword_problem(bench: Bench, factory: Callable[..., object]) -> Problem | None:
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
        ((field, f"{name!r} is passed to every cell's kernel{_ORIGIN.get(name, '')}, but "
                 f"{takes}")
         for name, field in passed if name not in accepted),
        None,
    )


# Where the keywords a bench does not spell out come from: the factory's author sees no
# `device` in the YAML, and a `dtypes:` list arrives as `dtype`.
_ORIGIN = {"device": " (the device it runs on: 'cpu' or 'cuda'; take device, or **_)",
           "dtype": " (one of dtypes: per cell)"}


def _required_problem(bench: Bench, factory: Callable[..., object]) -> Problem | None:
    """Every parameter the factory needs (one without a default) must reach every cell:
    from every variant, or from an axis in each of its values."""
    for name in sorted(required_keywords(factory) - {"device"}):
        if all(name in options for options in bench.variants.values()):
            continue
        problem = _unset_by_axes(bench, name)
        if problem is not None:
            return problem
    return None


def _unset_by_axes(bench: Bench, name: str) -> Problem | None:
    """Where the axes leave `name` unset in some cell, or None when one sets it in all."""
    needs = f"{bench.kernel_name} needs {name!r}"
    lacking: Problem | None = None
    for axis, values in bench.all_axes().items():
        sets = [name in value if isinstance(value, dict) else axis == name for value in values]
        if all(sets):
            return None
        if any(sets) and lacking is None:
            index = sets.index(False)
            lacking = ("axes", axis, str(index)), f"{needs}, which this value does not set"
    if lacking is not None:
        return lacking
    variant = next((v for v, options in bench.variants.items() if name not in options), "")
    if len(bench.variants) > 1 and any(name in o for o in bench.variants.values()):
        return ("variants", variant), f"{needs}: neither this variant nor an axis sets it"
    return ("kernel",), f"{needs}, but no axis or variant sets it"


def required_keywords(func: Callable[..., object]) -> set[str]:
    """The parameters of `func` a call by keywords must give: those without a default
    (none where its signature cannot be read)."""
    try:
        return signature_required(func)
    except (TypeError, ValueError):
        return set()


def _value_problem(bench: Bench, factory: Callable[..., object]) -> Problem | None:
    """Every value must be one the parameter's annotation admits, where it has one (a
    `Literal` names the choices): a typo in an option is an error here, not a cell
    measured with something else."""
    admits = _annotations(factory)
    for name, field, value in passed_values(bench):
        if name not in admits:
            continue
        try:
            admits[name].validate_python(value, strict=True)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"]
            return field, f"{bench.kernel_name}'s {name}: {reason} (got {value!r})"
    return None


def _annotations(factory: Callable[..., object]) -> dict[str, TypeAdapter[Any]]:
    """A validator per annotated parameter of `factory`; none where its annotations
    cannot be resolved, and none for a type pydantic cannot check (a tensor)."""
    try:
        parameters = inspect.signature(factory, eval_str=True).parameters.values()
    except Exception:  # a user's annotations may name anything, or nothing importable
        return {}
    admits: dict[str, TypeAdapter[Any]] = {}
    for parameter in parameters:
        if parameter.annotation is inspect.Parameter.empty:
            continue
        try:
            admits[parameter.name] = TypeAdapter(parameter.annotation)
        except (PydanticUserError, TypeError):
            continue
    return admits


def _keywords_taken(factory: Callable[..., object]) -> set[str] | None:
    """The keyword parameters of `factory`, or None when it takes any (`**kwargs`) or its
    signature cannot be read."""
    try:
        return signature_keywords(factory)
    except (TypeError, ValueError):
        return None
