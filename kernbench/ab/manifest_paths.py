"""The paths ab-run.json keeps (the bench, its folders, its committed pins): relative to
the project when they and the A/B's folder lie inside it, so a committed A/B folder names
no machine's folders; absolute otherwise (docs/adr/0021-ab-json-format.md, addendum).

A relative path is found again from the A/B's folder, not from the working folder: the
nearest folder above it that holds the path. Inside the project that is the project's
root, wherever the checkout now lies and wherever `--resume` is run from.
"""

from __future__ import annotations

from pathlib import Path

from kernbench.results.provenance import portable_path
from kernbench.spec.discovery import project_root


def recorded_path(path: str, folder: Path) -> str:
    """What ab-run.json in `folder` keeps of the absolute `path`."""
    absolute = Path(path).resolve()
    root = project_root().resolve()
    if Path(folder).resolve().is_relative_to(root):
        return portable_path(absolute)
    return str(absolute)  # relative to a project the A/B does not lie in: lost on resume


def resolved_path(recorded: str, folder: Path) -> str:
    """The absolute path `recorded` (`recorded_path`) names, for the A/B in `folder`."""
    path = Path(recorded)
    if path.is_absolute():
        return recorded
    here = Path(folder).resolve()
    for root in (here, *here.parents):
        if (root / path).exists():
            return str(root / path)
    return str(project_root() / path)  # not there: named where this project would hold it
