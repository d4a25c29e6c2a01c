"""What a worker process is given: its task file (the cells of one round, its pins and
journal) and its environment."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from kernbench.execute import launch
from kernbench.execute.cell_timers import read_timers, round_timers
from kernbench.execute.journal import TASK, Task
from kernbench.execute.lifetime import parent_env
from kernbench.execute.run_folder import RunFolder
from kernbench.plan import Cell
from kernbench.worker_env import ROUND_ENV, SIDE_ENV


def write_task(
    run: RunFolder, round_: int, cells: Sequence[Cell], device_model: str, slot: str = ""
) -> Path:
    """The task file of a process that measures `cells` of one round of `run`: where its
    pins are read and written, and its journal. Every path in it is absolute: a kernel
    may change the worker's directory (`os.chdir`), and the journal must not follow."""
    options = run.options
    folder = run.path.resolve()
    run_pins = folder / "pins.json"
    if options.pins is not None:
        read = [options.pins]
        # auto records what it finds no pin for: into the file named, as record does.
        write = [run_pins] + ([options.pins] if options.pins_mode != "replay" else [])
    else:
        read = [p for p in (options.project_pins, run_pins) if p is not None]
        # The bench's pins file changes only when asked: a plain run leaves the tree clean.
        saved = [options.project_pins] if options.save_pins and options.project_pins else []
        write = [run_pins] + saved
    task = Task(
        bench_path=str(options.bench_path.resolve()),
        round=round_,
        device=options.device,
        cells=[c.index for c in cells],
        journal_dir=str(folder / run.journal.name),
        pins_read=[str(p.resolve()) for p in read],
        pins_write=[str(p.resolve()) for p in write],
        pins_mode=options.pins_mode,
        device_model=device_model,
        slot=slot,
        timers=round_timers(
            run.journal, round_, cells, read_timers(options.timers) if options.timers else None
        ),
    )
    path = folder / "tasks" / f"r{round_}{slot_suffix(slot)}.json"
    TASK.write(path, task)
    return path


def child_env(base: Mapping[str, str]) -> dict[str, str]:
    """`base` for a process kernbench starts to measure (a worker, an A/B side): with this
    runner's pid, so it dies with the runner (`execute.lifetime`), and its output
    unbuffered, so its log keeps up with it."""
    return {**base, **parent_env(), "PYTHONUNBUFFERED": "1"}


def worker_env(device: str, round_: int, side: str) -> dict[str, str]:
    return child_env({
        **os.environ, **launch.launch_env(device), ROUND_ENV: str(round_), SIDE_ENV: side,
    })


def slot_suffix(slot: str) -> str:
    """How a lane's slot shows in the names of its task and log files."""
    return f".{slot}" if slot else ""
