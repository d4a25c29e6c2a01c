"""Every file kernbench writes, read and written through one policy.

A `FileFormat` names a kind of file, its current `schema_version`, its pydantic model and
the steps that upgrade older versions (`update_to[N]` turns version N-1 into N, asv's
way). `read` refuses a newer version with one line, migrates an older one step by step,
and validates; a file without a version is version 0 (the formats written before
versions were added everywhere). `write` is atomic with sorted keys, so committed data
diffs cleanly and a kill -9 never leaves half a file.
"""

from __future__ import annotations

import gzip
import json
import lzma
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from kernbench.errors import UserError, invalid_file
from kernbench.results import atomic

Model = TypeVar("Model", bound=BaseModel)
Migration = Callable[[dict[str, Any]], dict[str, Any]]


def unchanged(data: dict[str, Any]) -> dict[str, Any]:
    """The step to a version that only allows more (a field may now be null, or is new
    with a default): the older file reads as it is."""
    return data


@dataclass(frozen=True)
class FileFormat(Generic[Model]):
    what: str  # "results file", "A/B report", ... for error messages
    version: int
    model: type[Model]
    update_to: Mapping[int, Migration] = field(default_factory=dict)

    def upgrade(self, data: dict[str, Any], path: Path) -> dict[str, Any]:
        """`data` migrated to the current version; a newer or unknown one is refused."""
        version = data.get("schema_version", 0)
        if not isinstance(version, int) or isinstance(version, bool):
            raise UserError(f"{path}: schema_version: {version!r} is not an integer")
        if version > self.version:
            raise UserError(
                f"{path}: schema_version: {version} is newer than this kernbench understands "
                f"({self.version}); upgrade kernbench"
            )
        while version < self.version:
            step = self.update_to.get(version + 1)
            if step is None:
                raise UserError(
                    f"{path}: schema_version: {version} cannot be migrated; not a "
                    f"{self.what} this kernbench reads"
                )
            data = step(dict(data))
            version += 1
            data["schema_version"] = version
        return data

    def parse(self, data: Any, path: Path) -> Model:
        if not isinstance(data, dict):
            raise UserError(f"{path}: not a {self.what} (a JSON object is expected)")
        try:
            return self.model.model_validate(self.upgrade(data, path))
        except ValidationError as exc:
            raise invalid_file(path, exc) from None

    def read(self, path: Path) -> Model:
        return self.parse(read_json(path, self.what), Path(path))

    def write(self, path: Path, value: Model) -> None:
        write_json(path, value.model_dump(mode="json"))


# Committed data with raw samples is packed: `.xz` (a third smaller than gzip on these
# files, which keeps the repository small enough to carry to a GPU machine); `.gz` is
# still read (older data, users' files).
PACKED_SUFFIXES = (".xz", ".gz")


def read_text(path: Path) -> str:
    """A file's text, plain or packed (`.xz` or `.gz`: committed data with raw samples)."""
    path = Path(path)
    if path.suffix == ".xz":
        with lzma.open(path, "rt") as handle:
            return handle.read()
    if path.suffix == ".gz":
        with gzip.open(path, "rt") as handle:
            return handle.read()
    return path.read_text()


def plain_or_packed(path: Path) -> Path | None:
    """`path` if it exists, else its packed copy (`path.xz`, `path.gz`); None if neither:
    committed folders keep their large JSON files packed under the plain file's name."""
    path = Path(path)
    for candidate in (path, *(path.with_name(path.name + s) for s in PACKED_SUFFIXES)):
        if candidate.is_file():
            return candidate
    return None


def read_json(path: Path, what: str = "file") -> Any:
    path = Path(path)
    try:
        return json.loads(read_text(path))
    except FileNotFoundError:
        raise UserError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a {what}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except (EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError,
            UnicodeDecodeError) as exc:  # cut or binary
        raise UserError(f"{path}: not a readable {what}: {exc}") from None
    except OSError as exc:  # unreadable: permissions, a device, a broken disk
        raise UserError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # an integer too long, nesting too deep
        raise UserError(f"{path}: not a readable {what}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).split(";")[0].strip()
    return text or type(exc).__name__


def json_text(data: Any) -> str:
    """kernbench's JSON: indented, keys sorted, so diffs stay clean; a final line break."""
    return json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n"


def write_json(path: Path, data: Any) -> None:
    """Write `json_text` atomically (temp file + rename)."""
    atomic.write_text(path, json_text(data))


def write_packed_json(path: Path, data: Any) -> None:
    """`.xz` or `.gz` by the path's suffix, deterministic (gzip without name or mtime): the
    same data gives the same bytes."""
    text = json_text(data).encode()
    path = Path(path)
    if path.suffix not in PACKED_SUFFIXES:
        raise ValueError(f"{path}: a packed file ends in {' or '.join(PACKED_SUFFIXES)}")
    with atomic.replaced(path) as tmp, open(tmp, "wb") as raw:
        packer = (lzma.LZMAFile(raw, "wb", preset=9 | lzma.PRESET_EXTREME)
                  if path.suffix == ".xz" else
                  gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0))
        with packer:
            packer.write(text)
