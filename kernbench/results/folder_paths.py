"""The paths a folder's own JSON keeps: ab-run.json's bench, bench folders and committed
pins, run.json's bench, pins and timers. Relative to the project holding the folder when
they lie inside it, so a committed A/B or run folder names no machine's folders; absolute
otherwise (docs/adr/0021-ab-json-format.md, addenda).

Recording and resolving share one anchor, `folder_project`: the nearest kernbench checkout
at or above the folder (not the working folder's, which may be an outer or another
checkout), else the working folder's project when the folder lies in it. A relative path
resolves against that project's root, wherever the checkout now lies and wherever
`--resume` is run from, and never above it: a path missing there (pins a resume will
record) stays inside, unless the same relative path lies under one of the folder's own
ancestors within the project (the A/B-relative `"pins.json"` older packs wrote). A folder
that no project holds is a copy: its paths are looked for in the copy (`_in_copy`).
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
    here = Path(folder).resolve()
    project = folder_project(here)
    if project is not None:
        if (project / path).exists():
            return str(project / path)
        inside = [above for above in (here, *here.parents) if above.is_relative_to(project)]
        return str(_first_existing([path], inside) or project / path)
    return str(_in_copy(path, here) or project_root() / path)


def _in_copy(path: Path, here: Path) -> Path | None:
    """Where `path`, relative to the root of the project `here` was copied out of, lies in
    the copy: its trailing parts, longest first, under `here` or an ancestor, nearest
    first (`benches/data/X/pins.json` from `/tmp/X/r1_A` is `/tmp/X/pins.json`), so the
    copy's own file wins over the working project's."""
    tails = [Path(*path.parts[start:]) for start in range(len(path.parts))]
    return _first_existing(tails, [here, *here.parents])


def _first_existing(tails: list[Path], folders: list[Path]) -> Path | None:
    for tail in tails:
        for folder in folders:
            if (folder / tail).exists():
                return folder / tail
    return None
