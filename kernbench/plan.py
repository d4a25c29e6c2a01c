"""Materialize a bench into cells: one parameter combination of one variant.

The plan is pure: it reads a validated `Bench` and returns cells in a stable order
(variant, then axes in file order), each with a stable id that journals, results and
A/B reports key on.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernbench.errors import UserError
from kernbench.spec.models import Bench


@dataclass(frozen=True)
class Cell:
    variant: str
    axes: Mapping[str, Any]  # the axis values, as the bench file names them
    params: Mapping[str, Any]  # what the kernel factory gets: axes flattened + variant options
    index: int = field(default=0, compare=False)

    @property
    def id(self) -> str:
        return cell_id(self.variant, self.axes)


def cell_id(variant: str, axes: Mapping[str, Any]) -> str:
    parts = [f"{name}={axis_label(value)}" for name, value in axes.items()]
    return f"{variant}/{','.join(parts)}" if parts else variant


def axis_label(value: Any) -> str:
    """An axis value as cell ids write it: mappings and lists joined with 'x'."""
    if isinstance(value, Mapping):
        return "x".join(str(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def _axis_rows(bench: Bench) -> list[dict[str, Any]]:
    """The product of the axes, with each zip group moving as one axis."""
    axes = bench.all_axes()
    zipped = {axis: group for group in bench.zip for axis in group}
    dimensions: list[list[dict[str, Any]]] = []
    done: set[str] = set()
    for axis in axes:
        if axis in done:
            continue
        group = zipped.get(axis, [axis])
        done.update(group)
        columns = [axes[name] for name in group]
        # zipped axes have equal lengths (the model checks), so strict zips cannot fail
        rows_of_group = zip(*columns, strict=True)
        dimensions.append([dict(zip(group, values, strict=True)) for values in rows_of_group])
    rows = []
    for combination in itertools.product(*dimensions):
        row: dict[str, Any] = {}
        for part in combination:
            row.update(part)
        rows.append(row)
    return rows


def _flatten(axes: Mapping[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in axes.items():
        if isinstance(value, Mapping):
            params.update(value)
        else:
            params[name] = value
    return params


def _excluded(params: Mapping[str, Any], rules: Sequence[Mapping[str, Any]]) -> bool:
    for rule in rules:
        if all(_matches(params.get(key, _MISSING), want) for key, want in rule.items()):
            return True
    return False


_MISSING = object()


def _matches(value: Any, want: Any) -> bool:
    if value is _MISSING:
        return False
    if isinstance(want, list) and not isinstance(value, list):
        return value in want
    return bool(value == want)


def plan(bench: Bench, device: str | None = None) -> list[Cell]:
    """The cells of `bench`; with a `device`, each cell's params carry it and exclusion
    rules may name it (e.g. `{device: cpu, M: [8192, 16384]}`)."""
    cells: list[Cell] = []
    rows = _axis_rows(bench)
    extra = {"device": device} if device else {}
    for variant, options in bench.variants.items():
        for row in rows:
            params = {**_flatten(row), **options, **extra}
            if _excluded({**params, "variant": variant}, bench.exclude):
                continue
            cells.append(Cell(variant=variant, axes=row, params=params, index=len(cells)))
    return cells


def select(cells: list[Cell], only: Sequence[str]) -> list[Cell]:
    """The cells matching every `KEY=V1[,V2...]` filter (KEY: a parameter or `variant`).

    Values compare as text, so `--only M=4096 --only variant=triton,resident` works from a
    shell. Cells keep their indices, which journals and results key on.
    """
    chosen = list(cells)
    for text in only:
        key, sep, values = text.partition("=")
        if not sep or not key or not values:
            raise UserError(f"--only: {text!r} is not KEY=VALUE[,VALUE...]")
        known = {"variant"} | {name for cell in cells for name in cell.params}
        if key not in known:
            raise UserError(f"--only: unknown key {key!r}; known: {', '.join(sorted(known))}")
        wanted = set(values.split(","))
        chosen = [c for c in chosen if _as_text(c.variant if key == "variant"
                                                 else c.params.get(key)) in wanted]
    if not chosen:
        raise UserError(f"--only: no cell matches {' '.join(only)}")
    return chosen


def _as_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def shard(cells: list[Cell], spec: str) -> list[Cell]:
    """Shard `i/n` (1 <= i <= n) of the cells: every n-th cell from the i-th, so each shard
    gets a like mix of sizes and variants. Shards of one plan are disjoint and cover it."""
    first, sep, count = spec.partition("/")
    if not (sep and first.isdigit() and count.isdigit()):
        raise UserError(f"--shard: {spec!r} is not I/N (e.g. 2/8)")
    i, n = int(first), int(count)
    if not 1 <= i <= n:
        raise UserError(f"--shard: {spec!r}: I must be between 1 and N")
    return cells[i - 1 :: n]

# Building inputs, the one-time check and pin replay per cell, and a worker's start-up
# (Python, torch import) per round: rough figures, not measured per machine.
CELL_OVERHEAD_S = 0.5
ROUND_OVERHEAD_S = 5.0


def estimate_run_s(bench: Bench, n_cells: int) -> float:
    """Seconds: cells x rounds x (warm-up + budget + overhead), plus a start-up per round."""
    per_cell = bench.timer.warmup_s + bench.timer.budget_s + CELL_OVERHEAD_S
    return bench.rounds * (n_cells * per_cell + ROUND_OVERHEAD_S)
