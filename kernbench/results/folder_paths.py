"""The paths a folder's own JSON keeps: ab-run.json's bench, bench folders and committed
pins, run.json's bench, pins and timers. Relative to the project holding the folder when
they lie inside it, so a committed A/B or run folder names no machine's folders; absolute
otherwise (docs/adr/0021-ab-json-format.md, addenda).

Recording and resolving share one anchor, `folder_project`: the nearest kernbench checkout
at or above the folder (not the working folder's, which may be an outer or another
checkout), else the working folder's project when the folder lies in it. A relative path
resolves against that project's root, wherever the checkout now lies and wherever
`--resume` is run from, and never above it: a path missing there (pins a resume will
record) stays inside. Only a folder that no project holds walks up to find its paths.
"""

from __future__ import annotations

from pathlib import Path

from kernbench.spec.discovery import project_holding, project_root


def folder_project(folder: Path) -> Path | None:
    """The project whose root `folder`'s relative paths are taken from, or None."""
    here = Path(folder).resolve()
    holding = project_holding(here)
    if holding is not None:
        return holding
    root = project_root().resolve()
    return root if here.is_relative_to(root) else None


def recorded_path(path: str, folder: Path) -> str:
    """What the JSON of `folder` (ab-run.json, run.json) keeps of the absolute `path`."""
    absolute = Path(path).resolve()
    project = folder_project(folder)
    if project is not None and absolute.is_relative_to(project):
        return str(absolute.relative_to(project))
    return str(absolute)  # outside the folder's project: a relative form would be lost


def resolved_path(recorded: str, folder: Path) -> str:
    """The absolute path `recorded` (`recorded_path`) names, for the folder `folder`."""
    path = Path(recorded)
    if path.is_absolute():
        return recorded
    project = folder_project(folder)
    if project is not None:
        return str(project / path)
    # A folder copied out of its project: its project-relative paths may lie above it.
    here = Path(folder).resolve()
    for above in (here, *here.parents):
        if (above / path).exists():
            return str(above / path)
    return str(project_root() / path)
