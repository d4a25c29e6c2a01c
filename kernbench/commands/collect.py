"""`kernbench collect RUN_DIR`: rebuild a run's results.json from its journal, running
nothing: after a bench fix (a metric, the hardware profile) or a crash past the last
measurement, the samples are made into results again."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kernbench.commands.run import finish, open_run, report
from kernbench.commands.run_checks import reachable
from kernbench.errors import UserError
from kernbench.execute.journal import is_journaled
from kernbench.execute.lock import folder_lock
from kernbench.execute.options import holds_a_run
from kernbench.execute.progress import note
from kernbench.execute.run_cells import checked_plan
from kernbench.results import model as results_io
from kernbench.results import provenance
from kernbench.results.kinds import RESULTS_NAME, RUN_JSON_NAME
from kernbench.units import counted


def collect(folder: Path) -> int:
    """Write `folder`'s results.json (and figures, once every cell has its rounds) from
    its journal, with the bench as it is now; exit 1 when a cell failed or is missing."""
    if not holds_a_run(reachable(folder, "collect")):
        raise UserError(f"collect: {folder} holds no run ({RUN_JSON_NAME} not found)")
    with folder_lock(folder, note):
        run = open_run(folder, "collect")
        cells = checked_plan(run.options, run.bench)
        missing = sum(
            not is_journaled(run.journal, round_, cell.index)
            for round_ in run.options.rounds_range
            for cell in cells
        )
        results, trouble = finish(run, cells, complete=not missing,
                                  started=earlier_provenance(folder))
        if missing:
            print(f"{counted(missing, 'cell round')} not measured yet; measure them with: "
                  f"kernbench run --resume {folder}", file=sys.stderr)
        return report(results, folder, trouble)


def earlier_provenance(folder: Path) -> dict[str, Any] | None:
    """The provenance of the results the run wrote before, else the one it saved as it
    started: the machine and tree that measured, not those that collect."""
    try:
        return results_io.load(Path(folder) / RESULTS_NAME).provenance
    except UserError:
        return provenance.saved(folder)
