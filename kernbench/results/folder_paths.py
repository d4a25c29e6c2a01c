"""The paths a folder's own JSON keeps: ab-run.json's bench, bench folders and committed
pins, run.json's bench, pins and timers. Relative to the project when they and the folder
lie inside it, so a committed A/B or run folder names no machine's folders; absolute
otherwise (docs/adr/0021-ab-json-format.md, addenda).

A relative path is found again from the folder, not from the working folder: the nearest
folder above it that holds the path, else the project the folder lies in. Inside the
project that is the project's root, wherever the checkout now lies and wherever
`--resume` is run from.
"""

from __future__ import annotations

from pathlib import Path

from kernbench.results.provenance import portable_path
from kernbench.spec.discovery import project_holding, project_root


def recorded_path(path: str, folder: Path) -> str:
    """What the JSON of `folder` (ab-run.json, run.json) keeps of the absolute `path`."""
    absolute = Path(path).resolve()
    root = project_root().resolve()
    if Path(folder).resolve().is_relative_to(root):
        return portable_path(absolute)
    return str(absolute)  # relative to a project the folder does not lie in: lost on resume


def resolved_path(recorded: str, folder: Path) -> str:
    """The absolute path `recorded` (`recorded_path`) names, for the folder `folder`."""
    path = Path(recorded)
    if path.is_absolute():
        return recorded
    here = Path(folder).resolve()
    for root in (here, *here.parents):
        if (root / path).exists():
            return str(root / path)
    # Not there yet (pins a resume will record): where the folder's project, else this
    # one, would hold it; the working folder's project may be another checkout.
    return str((project_holding(here) or project_root()) / path)
