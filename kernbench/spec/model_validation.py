"""Validate a `Document` against a pydantic model; a `ValidationError` becomes one line.

The line is `PATH:LINE: field.path: message`, at the line of the deepest part of the
error's field path that exists in the file.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from kernbench.errors import MEANT_CUTOFF, SpecError
from kernbench.spec.problems import FieldProblem
from kernbench.spec.yaml_document import Document

Model = TypeVar("Model", bound=BaseModel)
_SHOWN_INPUT_CHARS = 40


def validate_document(model: type[Model], doc: Document, what: str) -> Model:
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


def _yaml_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"
