"""The figure cache: a PNG drawn once for given figure data is copied, not drawn again.

A figure's key is a hash of the data it plots, the source of the module that draws it and
of every module of this package (a drawing module uses others: style, series_look,
measured_on), and matplotlib's version: any of them changing draws it anew, so a cached
figure is never stale. Fast mode redraws the same committed data again and again;
with the cache it copies files. The cache lives in `KERNBENCH_CACHE_DIR`, else
`$XDG_CACHE_HOME/kernbench/figures` (`~/.cache/...`); `KERNBENCH_CACHE_DIR=off` turns it
off. A cache that cannot be written is skipped, never an error.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import matplotlib

from kernbench.errors import UserError
from kernbench.results.atomic import CannotWrite, replaced

CACHE_ENV = "KERNBENCH_CACHE_DIR"


def cache_dir() -> Path | None:
    chosen = os.environ.get(CACHE_ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kernbench" / "figures"


def figure_key(data: dict[str, Any], draw: Callable[..., Any]) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(data, sort_keys=True, default=str).encode())
    digest.update(_source_digest(inspect.getsourcefile(draw) or ""))
    for path in _package_sources():
        digest.update(_source_digest(path))
    digest.update(matplotlib.__version__.encode())
    return digest.hexdigest()[:32]


def fetch(key: str, path: Path) -> bool:
    """Copy the cached PNG of `key` to `path`; False when there is none."""
    folder = cache_dir()
    cached = folder / f"{key}.png" if folder else None
    if cached is None or not cached.is_file():
        return False
    try:
        with replaced(path) as tmp:
            shutil.copyfile(cached, tmp)
    except CannotWrite:
        return False
    return True


def store(key: str, path: Path) -> None:
    """Keep a copy of the PNG just drawn at `path` (atomically: forked drawers share it)."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        with replaced(folder / f"{key}.png") as tmp:  # no temporary left, come what may
            shutil.copyfile(path, tmp)
    except UserError:  # CannotWrite, or a folder of that name
        return


@cache
def _source_digest(path: str) -> bytes:
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError:
        return b""


@cache
def _package_sources() -> tuple[str, ...]:
    return tuple(str(path) for path in sorted(Path(__file__).parent.glob("*.py")))
