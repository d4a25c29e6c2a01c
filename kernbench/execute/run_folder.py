"""A run being measured: its options, the bench they name, and its folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernbench.execute.options import RunOptions
from kernbench.spec.models import Bench


@dataclass(frozen=True)
class RunFolder:
    """A run being measured: its options (its run.json), the bench they name, its folder."""

    options: RunOptions
    bench: Bench
    path: Path

    @property
    def journal(self) -> Path:
        return self.path / "journal"
