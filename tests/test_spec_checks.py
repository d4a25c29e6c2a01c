"""What `spec/checks.py` declares for the rest: the parameter a cell's ranks are read from."""

from __future__ import annotations

import re
from pathlib import Path

import kernbench
from kernbench.spec.checks import WORLD_SIZE, world_size_of

PACKAGE = Path(kernbench.__file__).parent


def test_a_cells_ranks_are_its_world_size_or_one() -> None:
    assert world_size_of({WORLD_SIZE: 4, "n": 8}) == 4
    assert world_size_of({"n": 8}) == 1


def test_no_module_reads_world_size_from_params_itself() -> None:
    spelled = re.compile(r"""params(\[|\.get\()["']world_size["']""")
    readers = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1) if spelled.search(line)
    ]
    assert readers == []
