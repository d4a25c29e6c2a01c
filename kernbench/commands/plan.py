"""`kernbench plan`: the cells a run would measure, as a table, and a time estimate."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kernbench.analyze.checks import check_bench
from kernbench.plan import (
    CELL_OVERHEAD_S,
    ROUND_OVERHEAD_S,
    Cell,
    estimate_run_s,
    plan,
    refuse_empty,
    settle_floor_s,
)
from kernbench.spec.cell_keys import as_text, axis_label
from kernbench.spec.discovery import find_bench
from kernbench.spec.hardware import resolve_device
from kernbench.spec.loader import shown_path

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
    console.print(f"bench {bench.name} ({shown_path(path)}) on {device}: {len(cells)} cells")
    if bench.requires.device not in ("any", device):
        console.print(f"note: this bench requires device {bench.requires.device}")
    if bench.requires.world_size > 1:
        console.print(f"note: each cell runs on {bench.requires.world_size} ranks")
    axes = list(bench.all_axes())
    table = Table("index", "variant", *axes)
    for cell in cells[:MAX_ROWS_SHOWN]:
        table.add_row(str(cell.index), cell.variant, *(axis_label(cell.axes[a]) for a in axes))
    console.print(table)
    if len(cells) > MAX_ROWS_SHOWN:
        console.print(
            f"... {len(cells) - MAX_ROWS_SHOWN} more cells not shown (narrow with --only)"
        )
    _show_variants(bench.variants, cells, console)
    seconds = estimate_run_s(bench, len(cells), device)
    settle_s = settle_floor_s(bench.timer, device)
    settle = f" + {settle_s:g} s settle" if settle_s else ""
    console.print(
        f"estimate (rough): about {_duration(seconds)} = {len(cells)} cells x {bench.rounds} "
        f"rounds x ({bench.timer.warmup_s:g} s warm-up + {bench.timer.budget_s:g} s budget"
        f"{settle} + {CELL_OVERHEAD_S:g} s overhead) + {ROUND_OVERHEAD_S:g} s start-up per "
        "round",
        soft_wrap=True,
    )
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
        "estimate_s": estimate_run_s(bench, len(cells), device),
        "cells": [{"index": c.index, "id": c.id, "variant": c.variant,
                   "axes": dict(c.axes), "params": dict(c.params)} for c in cells],
    }
    return json.dumps(document, indent=1, default=str) + "\n"
