"""The output paths the commands are given (`--out`): one check for all of them.

A folder to write into, or a file to write, is checked before anything is read or
measured, and refused in one line (a `UserError`, exit 2) where it cannot be: a file
where a folder is wanted, a folder where a file is, a file among its parents, no
permission. `create` makes the folder (or the file's folder) at once, parents too.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernbench.errors import UserError


def out_folder(path: Path, option: str = "--out", create: bool = True) -> Path:
    """`path` as a folder to write into; created (with its parents) unless not `create`."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{option}: {path} is a file; give a folder")
    _writable_under(path, path, option)
    if create:
        _make(path, path, option)
    return path


def out_file(path: Path, option: str = "--out", create: bool = True) -> Path:
    """`path` as a file to write; its folder created (with its parents) unless not
    `create`."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{option}: {path} is a folder; give a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"{option}: {path}: cannot write it (permission denied)")
    _writable_under(path.parent, path, option)
    if create:
        _make(path.parent, path, option)
    return path


def _writable_under(folder: Path, given: Path, option: str) -> None:
    """The nearest of `folder` and its parents that exists is a folder kernbench may
    write in (so `folder` can be made there)."""
    absolute = folder.absolute()
    existing = next(p for p in (absolute, *absolute.parents) if p.exists())
    if not existing.is_dir():
        raise UserError(f"{option}: {given}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{option}: {given}: cannot write in {existing} (permission denied)")


def _make(folder: Path, given: Path, option: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a race, a read-only file system, a full disk, /proc
        which = "the folder" if folder == given else f"its folder {folder}"
        raise UserError(f"{option}: {given}: cannot create {which}: "
                        f"{exc.strerror or exc}") from None
