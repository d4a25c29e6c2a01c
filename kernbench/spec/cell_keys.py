"""What a key names in a cell, as `--only` and `exclude:` match it, decided here for both
and for validate's check of the values an exclusion names.

`variant` names the cell's variant; a parameter, its value; a mapping (or list) axis, its
label as cell ids write it (`shape=512x512x512`), whatever keys it passes as parameters
of their own. `--only` compares all of them as text (a shell gives text); an exclusion
compares a value as YAML typed it (`n: 8` is not `n: "8"`), a label as text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from kernbench.spec.models import Bench


def axis_label(value: Any) -> str:
    """An axis value as cell ids write it: mappings and lists joined with 'x'."""
    if isinstance(value, Mapping):
        return "x".join(str(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def as_text(value: Any) -> str:
    """A parameter value as `--only` and `plan` write it (YAML's `true`, not `True`)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def named_by_label(value: Any) -> bool:
    """An axis value a key matches by its label: one that is no single parameter value."""
    return isinstance(value, dict | list | tuple)  # YAML's mappings are dicts


def known_keys(bench: Bench, device: bool = True) -> set[str]:
    """The keys a filter or an exclusion may name (`device` where the run sets it)."""
    known = {"variant"} | bench.parameter_names() | set(bench.all_axes())
    return known | {"device"} if device else known


class Named(NamedTuple):
    """What a key names in a cell (or over a bench); a tuple, as the plan asks once per
    cell and exclusion key."""

    values: tuple[Any, ...] = ()  # the variant's name, a parameter's value
    labels: tuple[str, ...] = ()  # a mapping or list axis as cell ids write it

    def texts(self) -> list[str]:
        """As `--only` matches them, in order."""
        return [*(as_text(v) for v in self.values), *self.labels]

    def matches(self, want: Any) -> bool:
        """An exclusion's value, or list of values (a list parameter compares whole)."""
        for value in self.values:
            if _equal_or_in(value, want):
                return True
        if not self.labels:
            return False
        wants = want if isinstance(want, list) else [want]
        return any(as_text(w) in self.labels for w in wants)


def named(key: str, variant: str, axes: Mapping[str, Any], params: Mapping[str, Any]) -> Named:
    if key == "variant":
        return Named(values=(variant,))
    values = (params[key],) if key in params else ()
    label = axes.get(key)
    return Named(values, (axis_label(label),) if named_by_label(label) else ())


def _equal_or_in(value: Any, want: Any) -> bool:
    if isinstance(want, list) and not isinstance(value, list):
        return value in want
    return bool(value == want)


def taken(bench: Bench) -> dict[str, Named]:
    """Each key's distinct values over the axes and variants, with `variant` and `device`:
    what an exclusion may name."""
    values: dict[str, list[Any]] = {"variant": list(bench.variants), "device": ["cpu", "cuda"]}
    for name, _, value in passed_values(bench):
        seen = values.setdefault(name, [])
        if not any(value == other for other in seen):
            seen.append(value)
    labels: dict[str, list[str]] = {}
    for axis, axis_values in bench.all_axes().items():
        for value in axis_values:
            if named_by_label(value):
                labels.setdefault(axis, []).append(axis_label(value))
    return {key: Named(tuple(values.get(key, ())), tuple(labels.get(key, ())))
            for key in values.keys() | labels.keys()}


def axis_field(bench: Bench, axis: str) -> tuple[str, ...]:
    """Where the axis is written: `dtypes` for the dtype axis it makes, else `axes.AXIS`."""
    return ("dtypes",) if axis == "dtype" and bench.dtypes else ("axes", axis)


class AxisValue(NamedTuple):
    """A parameter value an axis passes: a plain axis's value, or a key of a mapping
    axis's value."""

    axis: str
    row: int  # the axis's value it is (its position in the axis)
    key: str | None  # the mapping's key; None: a plain axis's value
    value: Any

    @property
    def parameter(self) -> str:
        return self.axis if self.key is None else self.key

    def field(self, bench: Bench) -> tuple[str, ...]:
        written = (*axis_field(bench, self.axis), str(self.row))
        return written if self.key is None else (*written, self.key)


def axis_values(bench: Bench) -> Iterator[AxisValue]:
    """Each parameter value the axes pass, axis by axis, in the file's order."""
    for axis, values in bench.all_axes().items():
        for row, value in enumerate(values):
            if isinstance(value, dict):
                for key, item in value.items():
                    yield AxisValue(axis, row, key, item)
            else:
                yield AxisValue(axis, row, None, value)


def passed_values(bench: Bench) -> Iterator[tuple[str, tuple[str, ...], Any]]:
    """(parameter, field, value) for each value an axis or a variant passes to the kernel."""
    for passed in axis_values(bench):
        yield passed.parameter, passed.field(bench), passed.value
    for variant, options in bench.variants.items():
        for option, value in options.items():
            yield option, ("variants", variant, option), value
