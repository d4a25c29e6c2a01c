"""`kernbench compare BASE NEW`: the verdict per cell, a table, and an exit code for CI."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from kernbench.ab.compare import compare, failing, markdown
from kernbench.errors import EXIT_FAILED, EXIT_OK
from kernbench.results import model as results_io
from kernbench.results.jsonio import write_json

COMPARE_VERSION = 1  # compare.json: written for people and tools, never read back here


def compare_runs(
    base: Path, new: Path, min_effect_pct: float = 1.0, fail_on: str | None = None,
    out: Path | None = None, force: bool = False,
) -> tuple[str, int]:
    """The markdown table and the exit code (1 when a cell matches `fail_on`)."""
    comparison = compare(results_io.load(base), results_io.load(new), min_effect_pct, force)
    text = markdown(comparison, str(base), str(new))
    bad = failing(comparison.cells, fail_on)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(text)
        record = {"schema_version": COMPARE_VERSION, **asdict(comparison)}
        write_json(out / "compare.json", json.loads(json.dumps(record)))
    if bad:
        text += f"\n{len(bad)} cell(s) {fail_on}: {', '.join(c.id for c in bad)}\n"
    return text, EXIT_FAILED if bad else EXIT_OK
