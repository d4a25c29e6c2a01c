"""Materialize a bench into cells: one parameter combination of one variant.

The plan is pure: it reads a validated `Bench` and returns cells in a stable order
(variant, then axes in file order), each with a stable id that journals, results and
A/B reports key on.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernbench.errors import UserError, is_whole_number
from kernbench.spec.cell_keys import axis_label, known_keys, named
from kernbench.spec.models import MAX_CELLS, Bench
from kernbench.spec.timer_model import TimerSpec, turn_spec
from kernbench.spec.yaml_document import field_error
from kernbench.units import counted

# How many of a key's values an `--only` error lists.
SHOWN_VALUES = 12


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


def _axis_rows(bench: Bench) -> Iterator[dict[str, Any]]:
    """The product of the axes, with each zip group moving as one axis, one row at a time."""
    for combination in itertools.product(*_dimensions(bench)):
        row: dict[str, Any] = {}
        for part in combination:
            row.update(part)
        yield row


def _dimensions(bench: Bench) -> list[list[dict[str, Any]]]:
    """One list per independent axis (a zip group counts as one), of its rows' parts."""
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
    return dimensions


def _flatten(axes: Mapping[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in axes.items():
        if isinstance(value, Mapping):
            params.update(value)
        else:
            params[name] = value
    return params


def _excluded(variant: str, axes: Mapping[str, Any], params: Mapping[str, Any],
              rules: Sequence[Mapping[str, Any]]) -> bool:
    return any(all(named(key, variant, axes, params).matches(want) for key, want in rule.items())
               for rule in rules)


def check_size(bench: Bench) -> None:
    """Refuse a bench of more than MAX_CELLS cells before building any of them."""
    count = bench.cell_count_bound()
    if count > MAX_CELLS:
        raise UserError(
            f"{bench.name}: {count} cells before exclusions, more than the {MAX_CELLS} "
            "a bench may have; split it or shorten an axis"
        )


def iter_cells(
    bench: Bench, device: str | None = None, only: Sequence[str] = (),
    taken: set[tuple[str, str]] | None = None, whole: Iterable[Cell] | None = None,
) -> Iterator[Cell]:
    """The cells of `bench` one at a time, those matching every `--only` filter; each keeps
    its index in the whole plan. With a `device`, each cell's params carry it and
    exclusion rules may name it (e.g. `{device: cpu, M: [8192, 16384]}`). `taken`
    collects each filter value some cell of the plan has. `whole`: the plan on `device`
    without filters, where already built, to choose from rather than make again."""
    check_size(bench)
    filters = _filters(only, _known_keys(bench, device))
    for cell in _every_cell(bench, device) if whole is None else whole:
        if taken is not None:
            taken.update(_values_taken(cell, filters))
        if all(_selected(cell, key, wanted) for key, wanted in filters):
            yield cell


def _every_cell(bench: Bench, device: str | None) -> Iterator[Cell]:
    extra = {"device": device} if device else {}
    index = 0
    for variant, options in bench.variants.items():
        for row in _axis_rows(bench):
            params = {**_flatten(row), **options, **extra}
            if _excluded(variant, row, params, bench.exclude):
                continue
            yield Cell(variant=variant, axes=row, params=params, index=index)
            index += 1


def plan(
    bench: Bench, device: str | None = None, only: Sequence[str] = (),
    whole: Sequence[Cell] | None = None,
) -> list[Cell]:
    """The cells of `bench` (see `iter_cells`, and its `whole`); `--only` filters matching
    nothing are an error."""
    taken: set[tuple[str, str]] = set()
    cells = list(iter_cells(bench, device, only, taken, whole))
    _check_values_taken(_filters(only, _known_keys(bench, device)), taken,
                        lambda: whole if whole is not None else iter_cells(bench, device))
    if only and not cells:
        raise UserError(f"--only: no cell matches {' '.join(only)}")
    return cells


def refuse_empty(cells: Sequence[Cell], bench_path: Path, device: str) -> None:
    """A plan of no cells is refused, at the bench's `exclude:`, which alone can drop all
    of `device`'s (validate refuses one that drops every device's)."""
    if not cells:
        raise field_error(bench_path, ("exclude",), f"the plan for device {device} is empty: "
                          f"the exclusions drop every cell on {device}")


def select(cells: list[Cell], only: Sequence[str]) -> list[Cell]:
    """The cells matching every `KEY=V1[,V2...]` filter (KEY: a parameter, an axis or
    `variant`).

    Values compare as text, so `--only M=4096 --only variant=triton,resident` works from a
    shell; an axis also matches as the plan shows it (`shape=256x256x256`). Cells keep
    their indices, which journals and results key on.
    """
    known = {"variant"} | {name for cell in cells for name in (*cell.params, *cell.axes)}
    filters = _filters(only, known)
    _check_values_taken(filters, {hit for c in cells for hit in _values_taken(c, filters)},
                        lambda: cells)
    chosen = [c for c in cells if all(_selected(c, key, wanted) for key, wanted in filters)]
    if not chosen:
        raise UserError(f"--only: no cell matches {' '.join(only)}")
    return chosen


def _known_keys(bench: Bench, device: str | None) -> set[str]:
    return known_keys(bench, device=bool(device))


def _filters(only: Sequence[str], known: set[str]) -> list[tuple[str, set[str]]]:
    """`KEY=V1[,V2...]` texts as (key, wanted values); a malformed or unknown key is an
    error."""
    filters = []
    for text in only:
        key, sep, values = text.partition("=")
        # A line break or other control character: no value a cell matches, and the
        # refusal that names the value would not stay one line.
        if not sep or not key or "" in values.split(",") or not text.isprintable():
            raise UserError(f"--only: {text!r} is not KEY=VALUE[,VALUE...]")
        if key not in known:
            raise UserError(f"--only: unknown key {key!r}; known: {', '.join(sorted(known))}")
        filters.append((key, set(values.split(","))))
    return filters


def _values_taken(cell: Cell, filters: list[tuple[str, set[str]]]) -> set[tuple[str, str]]:
    return {(key, value) for key, wanted in filters for value in wanted
            if _selected(cell, key, {value})}


def _check_values_taken(
    filters: list[tuple[str, set[str]]],
    taken: set[tuple[str, str]],
    every_cell: Callable[[], Iterable[Cell]],
) -> None:
    """A filter value no cell has is a typo, even where the filter's other values match:
    refused with the values the key takes (read from `every_cell` only then)."""
    for key, wanted in filters:
        missing = sorted(value for value in wanted if (key, value) not in taken)
        if missing:
            raise UserError(f"--only: no cell has {key}={','.join(missing)}; "
                            f"{key} takes {_values_shown(key, every_cell())}")


def _values_shown(key: str, cells: Iterable[Cell]) -> str:
    """The values `key` takes over `cells`, as `--only` matches them, in plan order: a
    mapping axis as the plan shows it (`shape` takes 16x1024), not as YAML writes it."""
    texts: dict[str, None] = {}
    for cell in cells:
        texts.update(dict.fromkeys(named(key, cell.variant, cell.axes, cell.params).texts()))
    shown = list(texts)
    more = f" and {len(shown) - SHOWN_VALUES} more" if len(shown) > SHOWN_VALUES else ""
    return ", ".join(shown[:SHOWN_VALUES]) + more


def _selected(cell: Cell, key: str, wanted: set[str]) -> bool:
    return not wanted.isdisjoint(named(key, cell.variant, cell.axes, cell.params).texts())


def shard(cells: list[Cell], spec: str) -> list[Cell]:
    """Shard `i/n` (1 <= i <= n) of the cells: every n-th cell from the i-th, so each shard
    gets a like mix of sizes and variants. Shards of one plan are disjoint and cover it."""
    first, sep, count = spec.partition("/")
    if not (sep and is_whole_number(first) and is_whole_number(count)):
        raise UserError(f"--shard: {spec!r} is not I/N (e.g. 2/8)")
    i, n = int(first), int(count)
    if not 1 <= i <= n:
        raise UserError(f"--shard: {spec!r}: I must be between 1 and N")
    chosen = cells[i - 1 :: n]
    if cells and not chosen:
        raise UserError(f"--shard {spec}: shard {i} of {n} is empty: the plan has "
                        f"{counted(len(cells), 'cell')}")
    return chosen


def parse_indices(text: str | None) -> tuple[int, ...] | None:
    """`--cells I,J,...`: plan indices; None when not given."""
    if text is None:
        return None
    parts = text.split(",")
    if not all(is_whole_number(part.strip()) for part in parts):
        raise UserError(f"--cells: {text!r} is not a list of cell indices (I,J,...)")
    return tuple(int(part) for part in parts)


def pick(cells: list[Cell], indices: Sequence[int]) -> list[Cell]:
    """The cells with these plan indices (`--cells`); an index the plan lacks is an error
    (the bench changed under an A/B)."""
    wanted = set(indices)
    chosen = [cell for cell in cells if cell.index in wanted]
    missing = wanted - {cell.index for cell in chosen}
    if missing:
        raise UserError(f"--cells: the plan has no cell {', '.join(map(str, sorted(missing)))}")
    return chosen

# Building inputs, the one-time check and pin replay per cell, and a worker's start-up
# (Python, torch import) per round: rough figures, not measured per machine.
CELL_OVERHEAD_S = 0.5
ROUND_OVERHEAD_S = 5.0


def round_order(cells: Sequence[Cell], seed: int | None, round_: int) -> list[Cell]:
    """The order a round visits `cells`: shuffled from (seed, round), so each round sees a
    different order and a heavy cell does not always precede the same light one (its
    power state would leak into that cell's samples); plan order when `seed` is None."""
    ordered = sorted(cells, key=lambda cell: cell.index)
    if seed is not None:
        random.Random(f"{seed}:{round_}").shuffle(ordered)
    return ordered


def settle_floor_s(timer: TimerSpec, device: str) -> float:
    """The settle phase a cell runs at least in a round: where it settles
    (`TimerSpec.settles`), `settle_min_s` every turn (ADR 0053)."""
    return timer.turns * timer.settle_min_s if timer.settles(device) else 0.0


def cell_round_s(timer: TimerSpec, device: str, call_s: float = 0.0) -> float:
    """Seconds a cell takes in a round when one call of it takes `call_s`. Each turn: the
    warm-up (at least one call), one call more (the CPU timer sizes its samples with it),
    the samples (the turn's budget, or its minimum samples
    where their calls outlast it) and the settle floor; once a round: the check (a call)
    and CELL_OVERHEAD_S. A slow cell is counted by its calls, not by the budget."""
    turn = turn_spec(timer, timer.turns)
    per_turn = (max(turn.warmup_s, call_s) + call_s
                + max(turn.budget_s, turn.min_samples * call_s))
    return timer.turns * per_turn + settle_floor_s(timer, device) + call_s + CELL_OVERHEAD_S


@dataclass(frozen=True)
class RunEstimate:
    seconds: float  # the whole run
    past_budget_s: float  # a round's part of it: the cells' calls that outlast their budgets


def estimate_run(
    bench: Bench, n_cells: int, device: str = "cpu", calls_s: Sequence[float] = ()
) -> RunEstimate:
    """Seconds: every cell's `cell_round_s` each round, plus a start-up per round.
    `calls_s`: a call's time, cell by cell, where known (the rest: 0, the budget alone)."""
    budget_only = cell_round_s(bench.timer, device)
    known = [cell_round_s(bench.timer, device, call) for call in calls_s[:n_cells]]
    unknown = (n_cells - len(known)) * budget_only
    return RunEstimate(seconds=bench.rounds * (sum(known) + unknown + ROUND_OVERHEAD_S),
                       past_budget_s=sum(each - budget_only for each in known))
