"""Pinned autotune: record each tuning decision once, replay it everywhere after.

A pin is keyed by the kernel and its tuning key (the cell's parameters) and carries a
fingerprint: the kernel's source hash, the device model and the versions of the
libraries that shape the code. Replaying a pin whose fingerprint no longer matches would
time a config chosen for other code or another device, so such a pin is reported as
stale and never reused silently.

Pins file format history (bump PINS_VERSION and add a step to PINS_FORMAT's `update_to`):
  1: first format.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field

from kernbench.results.jsonio import FileFormat
from kernbench.results.provenance import utc_now
from kernbench.spec.fields import Strict
from kernbench.spec.models import Bench
from kernbench.spec.op_factory import bench_source

PINS_VERSION = 1
PinMode = Literal["auto", "record", "replay"]
PIN_MODES: tuple[PinMode, ...] = get_args(PinMode)
# What each mode does, in `run --help` (an unknown mode is refused naming PIN_MODES).
PIN_MODE_HELP: dict[PinMode, str] = {
    "auto": "replay what is pinned, tune and record the rest",
    "record": "tune every cell and record its pins",
    "replay": "replay the pins only (the default with --pins)",
}
# Libraries whose version changes generated code; recorded only when the kernel loaded them.
TRACKED_LIBRARIES = ("numpy", "torch", "triton", "flag_gems")


def pin_key(kernel: str, device_model: str, params: Mapping[str, Any]) -> str:
    """Another device is another pin, not a stale one: the device model is in the key."""
    tuning = json.dumps(dict(params), sort_keys=True, separators=(",", ":"))
    return f"{kernel}|{device_model}|{tuning}"


def source_hash(paths: Iterable[Path], extra: str = "") -> str:
    digest = hashlib.sha256(extra.encode())
    for path in sorted(paths):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def bench_source_hash(bench: Bench, bench_dir: Path) -> str | None:
    """The hash of the module the bench's kernel (or op) comes from (`bench_source`): what
    its pins are fingerprinted with and a resume checks; None where it has none here."""
    path = bench_source(bench, bench_dir)
    return source_hash([path]) if path is not None else None


def library_versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED_LIBRARIES:
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = str(getattr(module, "__version__", "unknown"))
    return versions


def fingerprint(kernel: str, source: str | None, device_model: str) -> dict[str, Any]:
    """`source` None: a kernel with no module of its own (a library's op), whose pins have
    always recorded the hash of no file."""
    return {
        "kernel": kernel,
        "source_hash": source_hash([]) if source is None else source,
        "device_model": device_model,
        "versions": library_versions(),
    }


@dataclass(frozen=True)
class Lookup:
    pin: dict[str, Any] | None  # the pin to replay, when its fingerprint matches
    stale: dict[str, Any] | None  # a pin found for this key whose fingerprint differs

    def describe_stale(self, current: Mapping[str, Any]) -> str:
        assert self.stale is not None
        old = self.stale["fingerprint"]
        changed = sorted(k for k in set(old) | set(current) if old.get(k) != current.get(k))
        return "stale pin (fingerprint changed: " + ", ".join(changed) + ")"


class PinStore:
    """Pins read from some files and written to others (the run's folder, the user's file)."""

    def __init__(self, read: Iterable[Path] = (), write: Iterable[Path] = ()) -> None:
        self.read_paths = [Path(p) for p in read]
        self.write_paths = [Path(p) for p in write]
        self.pins: dict[str, dict[str, Any]] = {}
        for path in self.read_paths:
            self.pins.update(load_pins(path))
        self.used: dict[str, dict[str, Any]] = {}

    def lookup(self, key: str, current: Mapping[str, Any]) -> Lookup:
        if key not in self.pins:
            # Another live process may have recorded it since (an interleaved A/B's first
            # side records a cell's pin just before the other sides replay it).
            for path in self.read_paths:
                self.pins.update(load_pins(path))
        pin = self.pins.get(key)
        if pin is None:
            return Lookup(None, None)
        if pin["fingerprint"] != dict(current):
            return Lookup(None, pin)
        self.used[key] = pin
        return Lookup(pin, None)

    def record(
        self,
        key: str,
        current: Mapping[str, Any],
        winner: Mapping[str, Any],
        candidates: list[dict[str, Any]],
    ) -> dict[str, Any]:
        pin = {
            "fingerprint": dict(current),
            "winner": dict(winner),
            "candidates": candidates,
            "recorded_utc": utc_now(),
        }
        self.pins[key] = pin
        self.used[key] = pin
        for path in self.write_paths:
            with _folder_locked(path.parent):
                merged = load_pins(path) if path.exists() else {}
                merged[key] = pin
                save_pins(path, merged)
        return pin


@contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    """Workers of one round on several GPUs record into one pins file: each read-merge-
    write holds the folder's flock (the file itself is replaced, so it cannot hold one)."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # closing releases the lock


class PinsFile(Strict):
    schema_version: int = PINS_VERSION
    pins: dict[str, dict[str, Any]] = Field(default_factory=dict)  # by pin_key


PINS_FORMAT = FileFormat("pins file", PINS_VERSION, PinsFile)


def bench_pins_path(bench_path: Path, bench_name: str) -> Path:
    """The bench's own pins file, meant to be committed: what every run replays first."""
    return Path(bench_path).parent / "pins" / f"{bench_name}.json"


def load_pins(path: Path) -> dict[str, dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        return {}
    return PINS_FORMAT.read(path).pins


def save_pins(path: Path, pins: Mapping[str, Any]) -> None:
    PINS_FORMAT.write(Path(path), PinsFile(pins=dict(pins)))
