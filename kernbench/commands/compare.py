"""`kernbench compare BASE NEW`: the verdict per cell, a table, and an exit code for CI."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from kernbench.ab.compare import Comparison, compare, gate, markdown
from kernbench.ab.gate import fail_on_choice, gate_rounds_problem
from kernbench.errors import EXIT_FAILED, EXIT_OK, UserError
from kernbench.results import atomic
from kernbench.results import model as results_io
from kernbench.results.jsonio import write_json
from kernbench.results.outpaths import out_folder
from kernbench.results.provenance import code_label
from kernbench.spec.ab_model import DEFAULT_MIN_EFFECT, checked_min_effect
from kernbench.units import counted

# compare.json: written for people and tools, never read back here. 2: stopped_working
# (measured in BASE, failed or invalid in NEW), no longer among not_ok.
COMPARE_VERSION = 3  # 3: `pending`, cells an unfinished run never measured


def compare_runs(
    base: Path, new: Path, min_effect_pct: float = DEFAULT_MIN_EFFECT, fail_on: str | None = None,
    out: Path | None = None, force: bool = False,
) -> tuple[str, int]:
    """The markdown table and the exit code (1 when `fail_on` finds a cell called so, or,
    under slower or any, a cell that stopped working). Two runs without a cell measured
    in both are refused (exit 2), gate or not: nothing was compared, so no gate passes."""
    gate_on = fail_on_choice(fail_on)
    checked_min_effect(min_effect_pct)
    if out is not None:
        out_folder(out, create=False)
    sides = {"BASE": (base, results_io.load(base)), "NEW": (new, results_io.load(new))}
    for side, (path, results) in sides.items():
        refuse_unfinished(side, path, results)
    fewest = min(results.rounds for _, results in sides.values())
    if problem := gate_rounds_problem(gate_on, fewest):
        raise UserError(f"{problem}: compare runs of more rounds, or drop --fail-on")
    comparison = compare(sides["BASE"][1], sides["NEW"][1], min_effect_pct, force)
    text = markdown(comparison, str(base), str(new),
                    [measured_with(side, results) for side, (_, results) in sides.items()])
    reasons = gate(comparison, gate_on)
    if not comparison.cells and not reasons:
        raise UserError(f"compare: no cell was measured in both runs "
                        f"({_uncompared(comparison)}); nothing to compare")
    if out is not None:
        atomic.write_text(out_folder(out) / "compare.md", text)
        record = {"schema_version": COMPARE_VERSION, **asdict(comparison)}
        write_json(out / "compare.json", json.loads(json.dumps(record)))
    if reasons:
        text += "\n" + "".join(f"{line}\n" for line in reasons)
    return text, EXIT_FAILED if reasons else EXIT_OK


def measured_with(side: str, results: results_io.Results) -> str:
    """Where and with what a side was measured, as a run's report says it: two runs of
    other GPUs, drivers or torch differ for those reasons too, and the table cannot say so."""
    prov = results.provenance
    device = prov.get("device_name") or prov.get("cpu") or results.device
    driver = f", driver {prov['driver']}" if prov.get("driver") else ""
    libraries = "".join(f", {lib} {prov[lib]}" for lib in ("torch", "triton") if prov.get(lib))
    return (f"{side}: {device} ({results.device}){driver}; {code_label(prov)}{libraries}; "
            f"measured {results.created_utc}, {counted(results.rounds, 'round')}")


def refuse_unfinished(side: str, path: Path, results: results_io.Results) -> None:
    """A run stopped before its end (Ctrl-C, a kill) has cells whose rounds are not all
    measured: its verdicts would rest on the cells it reached, so it is finished first."""
    pending = sum(cell.status == "pending" for cell in results.cells)
    if pending:
        run_dir = path if path.is_dir() else path.parent
        raise UserError(f"compare: {side} {path} is an unfinished run ({pending} of "
                        f"{counted(len(results.cells), 'cell')} pending); finish it with "
                        f"kernbench run --resume {run_dir}")


def _uncompared(comparison: Comparison) -> str:
    counts = ((len(comparison.only_in_base), "only in BASE"),
              (len(comparison.only_in_new), "only in NEW"),
              (len(comparison.stopped_working), "failed or invalid in NEW"),
              (len(comparison.not_ok), "failed or invalid in BASE"))
    return ", ".join(f"{n} {what}" for n, what in counts if n) or "no cells"
