"""Callables named by a dotted path (`torch.topk`, `kernbench.kernels.router.router_step`),
and the keywords they take.

An `op:` bench names its operator, and a `check:` its reference, this way. Resolving
imports the longest importable module prefix of the path and reads the rest as
attributes, so `torch.nn.functional.softmax` and `torch.topk` both resolve. A prefix
with a file in the bench's folder (`myops.py` for `myops.scaled_add`) is imported from
there first, as a `kernel:` module is (`kernels.import_beside`).
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
import re
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.errors import MEANT_CUTOFF
from kernbench.kernels import FactoryError, MissingExtra, import_beside, local_module_file

DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
# Extras that bring what an op bench imports, by its top-level module.
INSTALL_HINT = {
    "torch": "pip install 'kernbench[torch]'",
    "flag_gems": "pip install 'kernbench[gpu]'",
}


def resolve_callable(path: str, bench_dir: Path | None = None) -> Callable[..., Any]:
    """The callable at `path`, its module looked for in `bench_dir` first; a path that
    does not resolve is a one-line FactoryError."""
    if not DOTTED.match(path):
        raise FactoryError(f"{path!r} is not a dotted path such as torch.topk")
    parts = path.split(".")
    module, depth = _import_longest(parts, bench_dir)
    target: Any = module
    for depth_reached, name in enumerate(parts[depth:], start=depth):
        if not hasattr(target, name):
            where = ".".join(parts[:depth_reached])
            meant = difflib.get_close_matches(name, [n for n in dir(target) if n[:1] != "_"],
                                              n=1, cutoff=MEANT_CUTOFF)
            guess = f"; did you mean {where}.{meant[0]}?" if meant else ""
            raise FactoryError(f"{where!r} has no attribute {name!r}{guess}")
        target = getattr(target, name)
    if not callable(target):
        raise FactoryError(f"{path} is not callable (a {type(target).__name__})")
    return target


def callable_source_path(path: str, bench_dir: Path) -> Path | None:
    """The file beside the bench that `path`'s module comes from, or None (a library's)."""
    parts = path.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        local = local_module_file(".".join(parts[:depth]), bench_dir)
        if local is not None:
            return local
    return None


def _import_longest(parts: list[str], bench_dir: Path | None) -> tuple[Any, int]:
    """The module of the longest importable prefix of `parts` (one beside the bench
    first), and that prefix's length."""
    for depth in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:depth])
        beside = import_beside(name, bench_dir) if bench_dir is not None else None
        if beside is not None:
            return beside, depth
        try:
            return importlib.import_module(name), depth
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name) and depth > 1:
                continue  # this prefix is not a module: try a shorter one
            raise missing_import(exc, name) from None
        except BaseException as exc:  # an imported module may raise anything
            if isinstance(exc, KeyboardInterrupt):
                raise
            detail = " ".join(str(exc).split()) or "no message"
            raise FactoryError(f"cannot import {name!r}: {type(exc).__name__}: {detail}") from None
    raise FactoryError(f"cannot import {parts[0]!r}")  # pragma: no cover - loop returns


def missing_import(exc: ModuleNotFoundError, name: str) -> FactoryError:
    """`name`'s failed import; a `MissingExtra` where an extra brings the module."""
    top = (exc.name or name).split(".")[0]
    hint = INSTALL_HINT.get(top)
    text = f"cannot import {name!r}: no module named {exc.name!r}"
    return MissingExtra(f"{text} ({hint})") if hint else FactoryError(text)


KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
# The most lines a docstring's signature is wrapped over (torch wraps one over two).
MAX_SIGNATURE_LINES = 8


def signature_keywords(func: Callable[..., Any]) -> set[str] | None:
    """The names `func`'s signature takes as keywords, or None when it takes any
    (`**kwargs`). Raises TypeError or ValueError where `func` has no signature."""
    parameters = inspect.signature(func).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind in KEYWORD_KINDS}


def signature_required(func: Callable[..., Any]) -> set[str]:
    """The keywords a call of `func` must give by its signature: those without a default.
    Raises TypeError or ValueError where `func` has no signature."""
    parameters = inspect.signature(func).parameters.values()
    return {p.name for p in parameters
            if p.kind in KEYWORD_KINDS and p.default is inspect.Parameter.empty}


def keyword_names(func: Callable[..., Any]) -> set[str] | None:
    """The names `func` takes as keywords, or None when it takes any (`**kwargs`) or they
    cannot be read. Builtins without a signature (torch's operators) are read from the
    first lines of their docstring, which torch writes as `topk(input, k, dim=None, ...)`."""
    try:
        return signature_keywords(func)
    except (TypeError, ValueError):
        return _names_from_doc(func)


def required_names(func: Callable[..., Any]) -> set[str]:
    """The keywords a call of `func` must give: its parameters without a default (of a
    builtin documented with several signatures, those every one of them needs); none
    where they cannot be read."""
    try:
        return signature_required(func)
    except (TypeError, ValueError):
        signatures = _signatures_from_doc(func)
        needed = [_without_default(arguments) for arguments in signatures]
        return set.intersection(*needed) if needed else set()


def _without_default(arguments: ast.arguments) -> set[str]:
    positional = arguments.args[: len(arguments.args) - len(arguments.defaults)]
    keyword_only = [a for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults,
                                            strict=True) if default is None]
    return {a.arg for a in (*positional, *keyword_only)}


def _names_from_doc(func: Callable[..., Any]) -> set[str] | None:
    names: set[str] = set()
    for arguments in _signatures_from_doc(func):
        if arguments.kwarg is not None:
            return None
        names.update(a.arg for a in (*arguments.args, *arguments.kwonlyargs))
    return names or None


def _signatures_from_doc(func: Callable[..., Any]) -> list[ast.arguments]:
    """The parameters of each `NAME(...)` line that starts a line of `func`'s docstring."""
    name = getattr(func, "__name__", "")
    signatures = []
    for line in _doc_lines(func):
        params = line[len(name) + 1 :].split(")", 1)[0]
        try:
            tree = ast.parse(f"def f({params}): pass")
        except SyntaxError:
            continue
        definition = tree.body[0]
        assert isinstance(definition, ast.FunctionDef)
        signatures.append(definition.args)
    return signatures


def _doc_lines(func: Callable[..., Any]) -> list[str]:
    """The lines of `func`'s docstring that start `NAME(`, as torch documents a call, each
    joined with the lines it continues on until its parentheses close: torch wraps a long
    signature (`scaled_dot_product_attention(query, key, value, attn_mask=None, ...,` and
    `is_causal=False, ...) -> Tensor:` on the next line)."""
    name = getattr(func, "__name__", "")
    lines = [line.strip() for line in (getattr(func, "__doc__", None) or "").splitlines()]
    found = []
    for start, line in enumerate(lines):
        if not name or not line.startswith(f"{name}("):
            continue
        joined = line
        for more in lines[start + 1 : start + 1 + MAX_SIGNATURE_LINES]:
            if joined.count("(") <= joined.count(")"):
                break
            joined = f"{joined} {more}"
        found.append(joined)
    return found


@dataclass(frozen=True)
class Outputs:
    """What a callable returns, read without calling it: `count` outputs, named by
    `fields` when they are a named tuple's; `single`: one tensor, not a tuple."""

    count: int
    fields: tuple[str, ...] = ()
    single: bool = False

    def has(self, selector: int | str) -> bool:
        """Whether a check's `outputs` entry can name one of them."""
        return selector < self.count if isinstance(selector, int) else selector in self.fields

    def __str__(self) -> str:
        if self.single:
            return "one tensor"
        return f"({', '.join(self.fields)})" if self.fields else f"a tuple of {self.count}"


def known_outputs(func: Callable[..., Any]) -> Outputs | None:
    """What `func` returns, where its kind says without a call: a torch operator with a
    named-tuple type (`torch.return_types.topk`: values, indices; its other overloads return
    one tensor, which index 0 names too), a torch operator documented to return one tensor,
    or a return annotation (a named tuple, a tuple of fixed length, a tensor). None otherwise."""
    named = _torch_return_type(func)
    if named is not None:
        return Outputs(len(named), named)
    returns = [line.rsplit("->", 1)[-1].strip().rstrip(":") for line in _doc_lines(func)
               if "->" in line]
    if returns and all(re.fullmatch(r"\w*Tensor", text) for text in returns):
        return Outputs(1, single=True)
    return _annotated_outputs(func)


def _torch_return_type(func: Callable[..., Any]) -> tuple[str, ...] | None:
    return_types = sys.modules.get("torch.return_types")
    if return_types is None or not str(getattr(func, "__module__", "")).startswith("torch"):
        return None
    kind = getattr(return_types, getattr(func, "__name__", ""), None)
    fields = getattr(kind, "__match_args__", None)
    return tuple(fields) if isinstance(fields, tuple) and fields else None


def _annotated_outputs(func: Callable[..., Any]) -> Outputs | None:
    try:
        annotation = typing.get_type_hints(func).get("return")
    except Exception:  # an annotation that does not evaluate here says nothing
        return None
    fields = getattr(annotation, "_fields", None)
    if isinstance(annotation, type) and isinstance(fields, tuple):
        return Outputs(len(fields), fields)
    if isinstance(annotation, type) and annotation.__name__ == "Tensor":
        return Outputs(1, single=True)
    items = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and items and Ellipsis not in items:
        return Outputs(len(items))
    return None
