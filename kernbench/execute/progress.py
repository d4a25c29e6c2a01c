"""The parent's report of cells as they finish: a rich bar on a terminal, lines otherwise;
and `note`, the one way kernbench's processes say a line on stderr beside it."""

from __future__ import annotations

import sys
import threading
from typing import Any

from kernbench.results.model import RoundResult
from kernbench.units import time_unit


def note(line: str) -> None:
    """One line on stderr, flushed at once: a run's notes, a side's log, a follower's word."""
    print(line, file=sys.stderr, flush=True)


class Progress:
    """Reports cells as they finish: a rich bar on a terminal, plain lines otherwise."""

    def __init__(self, total: int, bench: str) -> None:
        self.total = total
        self.done = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        if sys.stdout.isatty():
            # rich's progress machinery is loaded only when there is a terminal to draw on.
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                TextColumn("{task.fields[cell]}"),
            )
            self._bar.start()
            self._task = self._bar.add_task(bench, total=total, cell="")

    def started(self, label: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, cell=label)

    def finished(self, label: str, result: RoundResult) -> None:
        with self._lock:  # the lanes of a --gpus round report from threads of their own
            self._finished(label, result)

    def _finished(self, label: str, result: RoundResult) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, cell=label)
            if result.status != "ok":
                self._bar.console.print(f"[red]failed[/red] {label}: {result.reason}")
            return
        if result.status == "ok":
            status = format_time(result.median_s)
        else:
            status = f"FAILED {result.reason}"
        print(f"[{self.done}/{self.total}] {label}: {status}", flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def format_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    scale, unit = time_unit(seconds)
    # Plain lines land in logs and CI output, where a µ may not survive: us, in ASCII.
    return f"{seconds / scale:.4g} {unit.replace('µ', 'u')}"
