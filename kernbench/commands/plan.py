"""`kernbench plan`: the cells a run would measure, as a table, and a time estimate."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kernbench.analyze.checks import bench_notes, check_bench
from kernbench.analyze.metrics import call_floor_s
from kernbench.errors import UserError
from kernbench.plan import (
    CELL_OVERHEAD_S,
    ROUND_OVERHEAD_S,
    Cell,
    estimate_run,
    plan,
    refuse_empty,
    settle_floor_s,
)
from kernbench.spec.cell_keys import as_text, axis_label
from kernbench.spec.discovery import find_bench
from kernbench.spec.extras import first_missing_import, not_usable_here
from kernbench.spec.hardware import is_nominal, resolve_device
from kernbench.spec.models import Bench, HardwareProfile
from kernbench.spec.yaml_document import shown_path
from kernbench.units import counted

# A table of more rows is too long to read, and slow to draw (a minute for 10^5 rows).
MAX_ROWS_SHOWN = 1000


def show_plan(
    name: str,
    device: str,
    extra: Sequence[Path] = (),
    console: Console | None = None,
    only: Sequence[str] = (),
) -> list[Cell]:
    """Print the plan of bench `name` on `device` (cpu, cuda or auto); return its cells."""
    bench, path = find_bench(name, extra)
    device = resolve_device(device)
    check_bench(bench, path, device)
    cells = plan(bench, device, only)
    refuse_empty(cells, path, device)  # as `run` does
    console = console or Console(highlight=False)
    console.print(f"bench {bench.name} ({shown_path(path)}) on {device}: "
                  f"{counted(len(cells), 'cell')}")
    if bench.requires.device not in ("any", device):
        console.print(f"note: this bench requires device {bench.requires.device}")
    if bench.requires.world_size > 1:
        console.print(f"note: each cell runs on {bench.requires.world_size} ranks")
    missing = first_missing_import(bench)
    if missing is not None:
        console.print(f"note: {not_usable_here(missing[1])}", markup=False)
    for line in bench_notes(bench):
        console.print(f"note: {line}", markup=False, soft_wrap=True)
    axes = list(bench.all_axes())
    table = Table("index", "variant", *axes)
    for cell in cells[:MAX_ROWS_SHOWN]:
        table.add_row(str(cell.index), cell.variant, *(axis_label(cell.axes[a]) for a in axes))
    console.print(table)
    if len(cells) > MAX_ROWS_SHOWN:
        console.print(
            f"... {counted(len(cells) - MAX_ROWS_SHOWN, 'more cell')} not shown "
            "(narrow with --only)"
        )
    _show_variants(bench.variants, cells, console)
    console.print(_estimate_line(bench, cells, device), soft_wrap=True)
    return cells


def _show_variants(
    variants: Mapping[str, Mapping[str, Any]], cells: Sequence[Cell], console: Console
) -> None:
    """What each variant planned passes to the kernel, beside its cell count."""
    counts = Counter(cell.variant for cell in cells)
    table = Table("variant", "cells", "options")
    for variant, options in variants.items():
        if counts[variant]:
            shown = " ".join(f"{key}={as_text(value)}" for key, value in options.items())
            table.add_row(variant, str(counts[variant]), shown or "(none)")
    console.print(table)


def calls_s(
    bench: Bench, cells: Sequence[Cell], device: str
) -> tuple[list[float], HardwareProfile | None]:
    """Each cell's fastest call on this machine's hardware profile, and the profile; none
    where no profile is found (a plan for a device this machine lacks)."""
    from kernbench.execute.finish import select_profile  # its run-time imports: not at start-up

    try:
        profile = select_profile(bench, device)
    except UserError:
        return [], None
    return [call_floor_s(bench, cell.params, profile) for cell in cells], profile


def _estimate_line(bench: Bench, cells: Sequence[Cell], device: str) -> str:
    """The estimate and how it is made up, and what it cannot know."""
    calls, profile = calls_s(bench, cells, device)
    estimate = estimate_run(bench, len(cells), device, calls)
    timer = bench.timer
    settle_s = settle_floor_s(timer, device)
    settle = f" + {settle_s:g} s settle" if settle_s else ""
    past = estimate.past_budget_s
    slow = f" + {past:.0f} s of calls past the budget" if past >= 0.5 else ""
    line = (f"estimate (rough): about {_duration(estimate.seconds)} = "
            f"{counted(bench.rounds, 'round')} x ({counted(len(cells), 'cell')} x "
            f"({timer.warmup_s:g} s warm-up + {timer.budget_s:g} s budget{settle} + "
            f"{CELL_OVERHEAD_S:g} s overhead){slow} + {ROUND_OVERHEAD_S:g} s start-up)")
    if profile is None:
        return line + "; calls not counted (no hardware profile for this device here)"
    rates = (f"{profile.name}'s nominal rates, not this machine's (kernbench calibrate "
             f"--device {device} measures them)" if is_nominal(profile)
             else f"{profile.name}'s rates")
    return (line + f"; calls timed at the roofline of {rates}: the fastest they can be, so a "
            "slower or busy machine takes longer; autotuning not counted")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def plan_json(name: str, device: str, extra: Sequence[Path] = (),
              only: Sequence[str] = ()) -> str:
    """The plan as JSON for tools: the bench, the device, each cell and the estimate."""
    bench, path = find_bench(name, extra)
    device = resolve_device(device)
    check_bench(bench, path, device)
    cells = plan(bench, device, only)
    refuse_empty(cells, path, device)  # as `run` does
    document = {
        "bench": bench.name,
        "path": str(path),
        "device": device,
        "rounds": bench.rounds,
        "estimate_s": estimate_run(bench, len(cells), device,
                                   calls_s(bench, cells, device)[0]).seconds,
        "cells": [{"index": c.index, "id": c.id, "variant": c.variant,
                   "axes": dict(c.axes), "params": dict(c.params)} for c in cells],
    }
    return json.dumps(document, indent=1, default=str) + "\n"
