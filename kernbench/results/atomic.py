"""Every file kernbench writes appears whole or not at all.

A file is written beside its place under a temporary name and renamed over it once
complete, so a Ctrl-C, a kill -9 or a full disk never leaves half a report, a CSV cut at a
block boundary or a PNG that does not decode where a reader (or `report: PATH`) finds it.
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernbench.errors import UserError


class CannotWrite(UserError):
    """A file kernbench could not write (a full disk, a read-only folder): one line."""

    def __init__(self, path: Path, exc: OSError) -> None:
        super().__init__(f"{path}: cannot write: {exc.strerror or exc}")


@contextmanager
def replaced(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` for the block to write; once the block ends, it
    becomes `path`. On any error it is removed, and an `OSError` is raised as
    `CannotWrite`: `path` keeps what it held before."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a folder; give a file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=_temporary_prefix(path.name), dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise CannotWrite(path, exc) from None
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; outputs are meant to be shared
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a disk that filled up as the file was written
            raise CannotWrite(path, exc) from None
        raise


# mkstemp's names: the prefix, then 8 of lowercase letters, digits and underscores.
_TEMPORARY = re.compile(r"\.(.+)\.[a-z0-9_]{8}")


def _temporary_prefix(name: str) -> str:
    return f".{name}."


def is_temporary_of(path: Path, name: str) -> bool:
    """Whether `path` is what `replaced` named a temporary of a file called `name`: left
    behind where a kill -9 came before the rename (and the cleanup)."""
    return path.name.startswith(_temporary_prefix(name))


def temporary_target(path: Path) -> str | None:
    """The name of the file whose temporary `path` is (`.NAME.` and mkstemp's 8 random
    characters), None where `path` is no temporary of `replaced`'s."""
    found = _TEMPORARY.fullmatch(path.name)
    return found.group(1) if found else None


def remove_temporaries_of(path: Path) -> None:
    """Remove the temporaries of `path` that a writer killed before its cleanup left (one
    this process killed: a live writer's temporary must not be taken from it)."""
    for found in Path(path).parent.glob(f"{glob.escape(_temporary_prefix(path.name))}*"):
        if temporary_target(found) == path.name:
            found.unlink(missing_ok=True)


def remove_temporaries(folder: Path) -> list[Path]:
    """Remove the temporaries kills left in `folder` (not below it), the paths removed:
    only for the holder of the folder's lock while nothing else writes there, where a
    temporary can only be one whose writer is gone."""
    found = [path for path in Path(folder).iterdir()
             if _TEMPORARY.fullmatch(path.name) and path.is_file()]
    for path in found:
        path.unlink(missing_ok=True)
    return found


def write_text(path: Path, text: str) -> None:
    """`path.write_text(text)`, atomically."""
    with replaced(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
