"""Read one YAML file with the line of every key: a `Document`, and the line of a field.

A problem becomes one `SpecError` line, `PATH:LINE: field.path: message`, and nothing
else escapes: the YAML is read with a safe loader (no Python tags), and the line of each
key is taken from the composed node tree.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kernbench.errors import SpecError

LinePath = tuple[str, ...]
# Bench and profile files are a few KiB; a bigger file is a mistake (`/dev/zero`, a data
# file), and reading it whole would hang `validate` and `list`.
MAX_FILE_BYTES = 2**20


class _SafeLoader(yaml.SafeLoader):
    """SafeLoader's constructors only; a subclass so nothing we add leaks into PyYAML."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        # A scalar the safe constructors reject (`2001-02-30`, `!!int x`) raises a bare
        # ValueError without a position; give it the node's line.
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, OverflowError) as exc:
            problem = f"cannot read {_one_line(node.value)[:40]!r}: {_one_line(exc)}"
            raise ConstructorError(None, None, problem, node.start_mark) from None


# YAML 1.1 reads a float only with a dot and a signed exponent (1.0e-3): `1e-3`, `5E-2`
# and `1e+3` would be strings, which every number field refuses. Read them as YAML 1.2 does.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_SafeLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+.0123456789"))


@dataclass(frozen=True)
class Document:
    path: Path
    shown: str  # the path as error messages print it
    data: Any
    lines: Mapping[LinePath, int]  # key path (list indices as strings) -> 1-based line

    def line(self, parts: Sequence[object]) -> int | None:
        """The line of the deepest prefix of `parts` present in the file."""
        key = tuple(str(part) for part in parts)
        while key not in self.lines and key:
            key = key[:-1]
        return self.lines.get(key)


def shown_path(path: Path) -> str:
    """`path` relative to the working directory when under it, so messages stay short."""
    try:
        return (
            os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else str(path)
        )
    except (OSError, ValueError):
        return str(path)


def read_document(path: Path) -> Document:
    """Parse one YAML file with line numbers; a problem is a `SpecError`."""
    path = Path(path)
    shown = shown_path(path)
    text = _read_text(path, shown)
    try:
        loader = _SafeLoader(text)
    except yaml.reader.ReaderError as exc:  # the reader checks every character up front
        line = text.count("\n", 0, exc.position) + 1
        problem = f"unacceptable character #x{exc.character:04x}: {exc.reason}"
        raise SpecError(shown, line, "yaml", problem) from None
    try:
        root = loader.get_single_node()
        lines: dict[LinePath, int] = {}
        if root is not None:
            lines[()] = root.start_mark.line + 1
            _walk(root, (), lines, shown, set())
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(
            shown, mark.line + 1 if mark else None, "yaml", _one_line(problem)
        ) from None
    except yaml.YAMLError as exc:
        raise SpecError(shown, None, "yaml", _one_line(exc)) from None
    except RecursionError:
        raise SpecError(shown, None, "yaml", "document nested too deeply") from None
    except SpecError:
        raise
    except Exception as exc:  # never a traceback for a bad file
        raise SpecError(shown, None, "yaml", describe_exception(exc)) from None
    finally:
        loader.dispose()
    return Document(path=path, shown=shown, data=data, lines=lines)


def _read_text(path: Path, shown: str) -> str:
    """The file's text: a regular file of at most MAX_FILE_BYTES, as UTF-8."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            kind = "a folder" if path.is_dir() else "not a regular file"
            raise SpecError(shown, None, "", f"cannot read: {kind}")
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(shown, None, "", "file not found") from None
    except OSError as exc:
        raise SpecError(shown, None, "", f"cannot read: {_one_line(exc)}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(
            shown, None, "", f"larger than {MAX_FILE_BYTES // 2**20} MiB, too big for a bench "
            "or profile file"
        )
    if path.suffix in (".xz", ".gz"):
        raise SpecError(shown, None, "", "a packed file (results, as a run packs them), not a "
                        "bench or profile file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(shown, None, "", f"cannot read: {_one_line(exc)}") from None


def _walk(
    node: Node, path: LinePath, lines: dict[LinePath, int], shown: str, seen: set[int]
) -> None:
    # Aliases share nodes: visiting each node once keeps "billion laughs" documents
    # and alias cycles linear; an aliased copy's keys then fall back to its parent's line.
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, MappingNode):
        first: dict[tuple[str, str], int] = {}
        for key, value in node.value:
            if not isinstance(key, ScalarNode):
                continue  # construction reports unhashable keys
            line = key.start_mark.line + 1
            if (key.tag, key.value) in first:
                field = ".".join((*path, key.value))
                raise SpecError(
                    shown, line, field, f"duplicate key (first on line {first[key.tag, key.value]})"
                )
            first[key.tag, key.value] = line
            lines[(*path, key.value)] = line
            _walk(value, (*path, key.value), lines, shown, seen)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, str(index))] = item.start_mark.line + 1
            _walk(item, (*path, str(index)), lines, shown, seen)


def field_error(path: Path, parts: Sequence[str], message: str) -> SpecError:
    """A `SpecError` at the line of field `parts` of the file at `path`: for checks made
    after loading (a metric on a cell, a hardware profile's name)."""
    try:
        doc = read_document(path)
    except SpecError:
        return SpecError(shown_path(path), None, ".".join(parts), message)
    return SpecError(doc.shown, doc.line(parts), ".".join(parts), message)


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def describe_exception(exc: BaseException) -> str:
    text = _one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
