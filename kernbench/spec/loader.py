"""Load bench and hardware files: a YAML document, validated into its model, then checked.

Every problem becomes one `SpecError` line, `PATH:LINE: field.path: message`
(`yaml_document.py` reads the file with its lines, `model_validation.py` words a
model's errors); nothing else escapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kernbench.errors import NeedsExtra, SpecError
from kernbench.kernels import BUILTINS, FactoryError, MissingExtra, resolve_factory
from kernbench.spec.checks import bench_problem, factory_problem
from kernbench.spec.extras import first_missing_import
from kernbench.spec.model_validation import validate_document
from kernbench.spec.models import Bench, HardwareProfile
from kernbench.spec.op_checks import op_problem
from kernbench.spec.yaml_document import Document, describe_exception, read_document


def load_bench(path: Path, import_code: bool = True) -> Bench:
    """Read, validate and check one bench file: models, metric expressions, the kernel.
    Without `import_code` (`list`), no kernel or op module is imported (an op's is
    torch's, seconds to import): their names and keywords go unchecked."""
    doc = read_document(path)
    if _written_by_a_run(doc.data):
        raise SpecError(doc.shown, None, "", "this looks like a results file a run wrote "
                        "(it has spec_hash and cells), not a bench file")
    with _one_line_errors(doc):
        bench = validate_document(Bench, doc, "bench fields")
        _check_bench(bench, doc, import_code)
    return bench


def _written_by_a_run(data: Any) -> bool:
    return isinstance(data, dict) and "name" not in data and {"spec_hash", "cells"} <= set(data)


def load_hardware(path: Path) -> HardwareProfile:
    """Read and validate one hardware profile."""
    doc = read_document(path)
    with _one_line_errors(doc):
        profile = validate_document(HardwareProfile, doc, "hardware profile fields")
    return profile


@contextmanager
def _one_line_errors(doc: Document) -> Iterator[None]:
    """Whatever goes wrong loading `doc` as one `SpecError` line: never a traceback for a
    bad file."""
    try:
        yield
    except SpecError:
        raise
    except RecursionError:
        raise SpecError(doc.shown, None, "", "document nested too deeply") from None
    except Exception as exc:
        raise SpecError(doc.shown, None, "", f"cannot load: {describe_exception(exc)}") from None


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
