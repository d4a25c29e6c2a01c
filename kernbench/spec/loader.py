"""Read bench and hardware files: YAML with line numbers -> validated models.

Every problem becomes one `SpecError` line, `PATH:LINE: field.path: message`, and
nothing else escapes: the YAML is read with a safe loader (no Python tags), the line of
each key is taken from the composed node tree, and a pydantic `ValidationError` is
rewritten with the line of the deepest part of its field path that exists in the file.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, get_args

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kernbench.errors import MEANT_CUTOFF, NeedsExtra, SpecError
from kernbench.kernels import BUILTINS, FactoryError, MissingExtra, resolve_factory
from kernbench.spec.checks import bench_problem, factory_problem
from kernbench.spec.extras import first_missing_import
from kernbench.spec.models import Bench, HardwareProfile
from kernbench.spec.op_checks import op_problem
from kernbench.spec.problems import FieldProblem

LinePath = tuple[str, ...]
Model = TypeVar("Model", bound=BaseModel)
_SHOWN_INPUT_CHARS = 40
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
        raise SpecError(shown, None, "yaml", _describe(exc)) from None
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


def load_bench(path: Path, import_code: bool = True) -> Bench:
    """Read, validate and check one bench file: models, metric expressions, the kernel.
    Without `import_code` (`list`), no kernel or op module is imported (an op's is
    torch's, seconds to import): their names and keywords go unchecked."""
    doc = read_document(path)
    if _written_by_a_run(doc.data):
        raise SpecError(doc.shown, None, "", "this looks like a results file a run wrote "
                        "(it has spec_hash and cells), not a bench file")
    try:
        bench = _validate(Bench, doc, "bench fields")
        _check_bench(bench, doc, import_code)
    except SpecError:
        raise
    except RecursionError:
        raise SpecError(doc.shown, None, "", "document nested too deeply") from None
    except Exception as exc:  # never a traceback for a bad file
        raise SpecError(doc.shown, None, "", f"cannot load: {_describe(exc)}") from None
    return bench


def _written_by_a_run(data: Any) -> bool:
    return isinstance(data, dict) and "name" not in data and {"spec_hash", "cells"} <= set(data)


def load_hardware(path: Path) -> HardwareProfile:
    """Read and validate one hardware profile."""
    doc = read_document(path)
    try:
        return _validate(HardwareProfile, doc, "hardware profile fields")
    except SpecError:
        raise
    except RecursionError:
        raise SpecError(doc.shown, None, "", "document nested too deeply") from None
    except Exception as exc:
        raise SpecError(doc.shown, None, "", f"cannot load: {_describe(exc)}") from None


def _validate(model: type[Model], doc: Document, what: str) -> Model:
    if doc.data is None:
        raise SpecError(doc.shown, None, "", f"empty file; expected a mapping of {what}")
    if not isinstance(doc.data, dict):
        kind = _yaml_kind(doc.data)
        raise SpecError(doc.shown, doc.line(()), "", f"expected a mapping of {what}, not {kind}")
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise _spec_error(exc, model, doc) from None


def _spec_error(exc: ValidationError, model: type[BaseModel], doc: Document) -> SpecError:
    """The first error as one line; errors on the same field from union members merge."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for error in exc.errors(include_url=False):
        groups.setdefault(_field_parts(error, doc.data), []).append(dict(error))
    parts, errors = _first_shown(groups, doc)
    message = _message(errors, model, parts)
    if len(groups) > 1:
        message += f" (and {len(groups) - 1} more)"
    field = ".".join(str(part) for part in parts)
    return SpecError(doc.shown, doc.line(parts), field, message)


def _first_shown(
    groups: dict[tuple[Any, ...], list[dict[str, Any]]], doc: Document
) -> tuple[tuple[Any, ...], list[dict[str, Any]]]:
    """An error at a key the file has (an unknown key, a wrong value) before one with no
    line of its own: a missing field is reported at its parent, often line 1, and would
    hide a typo that its own line explains."""
    for parts, errors in groups.items():
        at_own_line = parts and tuple(str(part) for part in parts) in doc.lines
        if at_own_line and all(error["type"] != "missing" for error in errors):
            return parts, errors
    return next(iter(groups.items()))


def _field_parts(error: Mapping[str, Any], data: Any) -> tuple[Any, ...]:
    """The error's location in the document, without pydantic's union-member labels; a
    model validator's `FieldProblem` adds the path of its field."""
    loc = tuple(error["loc"])
    problem = (error.get("ctx") or {}).get("error")
    if isinstance(problem, FieldProblem):
        loc += problem.field
    parts: list[Any] = []
    node = data
    for position, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif error["type"] == "missing" and position == len(loc) - 1:
            pass
        else:
            # A label such as 'int' or 'list[...]' naming a union member: every member's
            # error belongs to the value the union checks, so they are reported together.
            break
        parts.append(part)
    return tuple(parts)


def _message(errors: list[dict[str, Any]], model: type[BaseModel], parts: tuple[Any, ...]) -> str:
    first = errors[0]
    if first["type"] == "extra_forbidden":
        known = _known_fields(model, parts[:-1])
        if not known:
            return "unknown key"
        meant = difflib.get_close_matches(str(parts[-1]), known, n=1, cutoff=MEANT_CUTOFF)
        guess = f"did you mean {meant[0]!r}? " if meant else ""
        return f"unknown key; {guess}known: {', '.join(known)}"
    texts = [_clean(error["msg"]) for error in errors]
    prefix = "Input should be "
    if len(texts) > 1 and all(text.startswith(prefix) for text in texts):
        kinds = dict.fromkeys(text[len(prefix) :] for text in texts)
        message = prefix + " or ".join(kinds)
    else:
        message = texts[0]
    if first["type"] != "missing":
        shown = _shown_input(first.get("input"))
        if shown and first["type"] == "list_type" and len(errors) == 1:  # `n: 64` for [64]
            message += f" (got {shown}; one value is a list of one: [{shown}])"
        elif shown:
            message += f" (got {shown})"
    return message


def _clean(msg: str) -> str:
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg[len(prefix) :]
    return msg


def _shown_input(value: Any) -> str | None:
    if isinstance(value, bool | int | float | str) or value is None:
        text = repr(value)
        return text if len(text) <= _SHOWN_INPUT_CHARS else None
    return None


def _known_fields(model: type[BaseModel], parts: tuple[Any, ...]) -> list[str]:
    """Field names of the model found at `parts` (for 'unknown key; known: ...')."""
    current: type[BaseModel] | None = model
    for part in parts:
        if current is None or part not in current.model_fields:
            return []
        current = _model_in(current.model_fields[part].annotation)
    return list(current.model_fields) if current is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _check_bench(bench: Bench, doc: Document, import_code: bool) -> None:
    """What the models cannot see (`spec/checks.py`), then the kernel's factory and the
    keywords it takes, or the op and its keywords (`spec/op_checks.py`)."""
    problem = bench_problem(bench)
    missing = None if import_code or problem is not None else first_missing_import(bench)
    if missing is not None:
        field, why = missing
        raise NeedsExtra(doc.shown, doc.line(field), ".".join(field), why)
    if problem is None and bench.op is not None:
        try:
            problem = op_problem(bench, doc.path.parent) if import_code else None
        except MissingExtra as exc:  # worded as the field rule words it, where it knows
            field, why = first_missing_import(bench) or (("op",), str(exc))
            raise NeedsExtra(doc.shown, doc.line(field), ".".join(field), why) from None
    elif problem is None and bench.kernel is not None:
        if ":" not in bench.kernel and bench.kernel not in BUILTINS:
            message = (
                f"unknown kernel {bench.kernel!r}; built-in: {', '.join(sorted(BUILTINS))} "
                "(or give module:factory)"
            )
            raise SpecError(doc.shown, doc.line(("kernel",)), "kernel", message)
        if import_code:
            try:
                factory = resolve_factory(bench.kernel, doc.path.parent)
            except FactoryError as exc:
                raise SpecError(doc.shown, doc.line(("kernel",)), "kernel", str(exc)) from None
            problem = factory_problem(bench, factory)
    if problem is not None:
        field, message = problem
        raise SpecError(doc.shown, doc.line(field), ".".join(field), message)


def field_error(path: Path, parts: Sequence[str], message: str) -> SpecError:
    """A `SpecError` at the line of field `parts` of the file at `path`: for checks made
    after loading (a metric on a cell, a hardware profile's name)."""
    try:
        doc = read_document(path)
    except SpecError:
        return SpecError(shown_path(path), None, ".".join(parts), message)
    return SpecError(doc.shown, doc.line(parts), ".".join(parts), message)


def _yaml_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def _describe(exc: BaseException) -> str:
    text = _one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
