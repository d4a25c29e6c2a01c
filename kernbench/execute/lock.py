"""A run folder's lock: one kernbench at a time measures, resumes or collects a folder.

The lock is an `flock` on `run.lock` in the folder, held for the whole command: the
kernel releases it when the process ends, however it ends, so a `kill -9` leaves no lock
that blocks the next `--resume`. The file holds the holder's pid while it is held and is
removed on release, so a finished run's folder holds none; a pid found in a file whose
lock is free was left by a process that died holding it, and is taken over with a note.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kernbench.errors import UserError

LOCK_NAME = "run.lock"


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 64).decode(errors="replace").strip()


@contextmanager
def folder_lock(folder: Path, note: Callable[[str], None]) -> Iterator[None]:
    """Hold `folder`'s lock (creating the folder) while the block runs; refuse with one
    line when another live process holds it."""
    folder = Path(folder)
    path = folder / LOCK_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{folder}: cannot create the folder: {exc.strerror or exc}") from None
    fd = _open_lock(folder, path)
    try:
        stale = _holder(fd)
        if stale and stale != str(os.getpid()):
            note(f"note: {folder}: taking over the lock left by pid {stale}, which ended "
                 "without releasing it")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)  # while still held: "in use" only while in use
    finally:
        os.close(fd)  # releases the flock


def _open_lock(folder: Path, path: Path) -> int:
    """The lock file, opened and held. A holder removes it before letting go, so a lock
    won on a file since removed is no lock: the file is opened again."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UserError(f"{folder}: cannot write its lock, {LOCK_NAME}: "
                            f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(fd) or "unknown"
            os.close(fd)
            raise UserError(
                f"{folder}: in use by another kernbench (pid {pid}); wait for it to end, "
                "or stop it"
            ) from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)
