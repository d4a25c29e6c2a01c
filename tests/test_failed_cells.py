"""The terminal names a reason once, with the cells that failed with it."""

from __future__ import annotations

from kernbench.commands.failed_cells import failed_lines
from kernbench.results.model import CellResult

BROKEN = "round 1: ContractError: a kernel factory must return a callable or a Kernel, " \
    "not NoneType (k.py:1, in make)"


def cell(index: int, reason: str) -> CellResult:
    return CellResult(id=f"v/n={index}", index=index, variant="v", axes={"n": index},
                      params={"n": index}, status="failed", reason=reason, rounds=[])


def test_a_reason_shared_by_many_cells_is_one_line_naming_three() -> None:
    # It was a line per cell: a sweep of a broken factory printed hundreds of the same.
    cells = [cell(i, BROKEN) for i in range(8)] + [cell(9, "round 2: ValueError: n=9")]
    assert failed_lines(cells) == [
        f"  failed: 8 cells (v/n=0, v/n=1, v/n=2 and 5 more): {BROKEN}",
        "  failed: v/n=9: round 2: ValueError: n=9",
    ]


def test_two_cells_of_one_reason_are_both_named() -> None:
    assert failed_lines([cell(1, BROKEN), cell(2, BROKEN)]) == [
        f"  failed: 2 cells (v/n=1, v/n=2): {BROKEN}"]


def test_the_run_summary_prints_them_so(tmp_path, capsys) -> None:
    from test_render_generic import copy_results

    from kernbench.commands.run import report

    results = copy_results(None)
    failed = [c.model_copy(update={"status": "failed", "reason": BROKEN, "summary": None})
              for c in results.cells]
    report(results.model_copy(update={"cells": failed}), tmp_path)
    lines = [line for line in capsys.readouterr().err.splitlines() if "ContractError" in line]
    assert lines == [f"  failed: {len(failed)} cells ({', '.join(c.id for c in failed[:3])} "
                     f"and {len(failed) - 3} more): {BROKEN}"]
