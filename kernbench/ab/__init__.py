"""A/B of one switch over rounds of fresh processes: orchestration, statistics, report.

The method is in docs/adr/0020-ab-method.md, the ab.json format in
docs/adr/0021-ab-json-format.md.
"""

from __future__ import annotations

from kernbench.ab.analysis import AbCell, AbReport, RunOutcome, analyze
from kernbench.ab.outputs import is_ab_folder, summarize_ab, write_outputs
from kernbench.ab.run import AbOutcome, run_ab
from kernbench.ab.schedule import AbManifest, SideRun, load_manifest, schedule
from kernbench.ab.sides import SideRequest, run_subprocess
from kernbench.ab.verdicts import verdict

__all__ = [
    "AbCell",
    "AbManifest",
    "AbOutcome",
    "AbReport",
    "RunOutcome",
    "SideRequest",
    "SideRun",
    "analyze",
    "is_ab_folder",
    "load_manifest",
    "run_ab",
    "run_subprocess",
    "schedule",
    "summarize_ab",
    "verdict",
    "write_outputs",
]
