"""`kernbench validate`: check bench files and hardware profiles, every problem reported;
and `kernbench list`'s rows of the benches found.

A bench is checked as far as it can be before anything is measured (`check_bench`, which
`plan` and `run` share): the file and its kernel (the loader), then the hardware profile
it names and every metric on every cell of its plan; `validate` also refuses a `data:`
file that is not there (`plan` and `run` do not: a new bench's first run makes it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

import typer

from kernbench.analyze.checks import bench_notes, check_bench
from kernbench.errors import NeedsExtra, SpecError, UserError
from kernbench.spec.data_file import committed_data
from kernbench.spec.discovery import (
    FoundBenches,
    bench_name,
    benches_by_name,
    is_bench_path,
    name_clash,
    no_benches_found,
    search_benches,
    unknown_bench,
    yaml_files_in,
)
from kernbench.spec.extras import first_missing_import, not_usable_here
from kernbench.spec.hardware import profile_files
from kernbench.spec.loader import load_bench, load_hardware
from kernbench.spec.models import YAML_SUFFIXES, Bench
from kernbench.spec.yaml_document import read_document, shown_path


class Outcome(NamedTuple):
    """A file (or a name) checked: its error, or None and what holds of the bench that
    checks (it cannot run here, as `list` says "not usable here", and why)."""

    path: Path
    error: UserError | None = None
    notes: tuple[str, ...] = ()


def validate_files(paths: Sequence[Path], extra: Sequence[Path] = ()) -> list[Outcome]:
    """Each file of `paths` (a folder: its bench or profile files; a bench's name, as
    `--bench` takes it: its file), checked as a bench or a hardware profile; the bench
    files of one folder (or name) checked, as `plan` and `run` find them, for two of a
    name."""
    outcomes: list[Outcome] = []
    found = cache(lambda: benches_by_name(extra))  # searched once, and only for a name
    for path in paths:
        try:
            files = _named_files(path, found, extra)
        except UserError as exc:
            outcomes.append(Outcome(path, exc))
            continue
        outcomes += [_outcome(file, _loader_for(file)) for file in files]
        outcomes += _name_clashes(file for file in files if _loader_for(file) is load_and_check)
    return outcomes


def validate_found(found: FoundBenches) -> list[Outcome]:
    """Every bench of one search, a check that no two share a name, and every hardware
    profile: `validate` without paths."""
    outcomes = [_outcome(p, load_and_check) for p in found.files]
    outcomes += [_outcome(p, load_hardware) for p in profile_files()]
    return outcomes + _clashes_of(found)


def _name_clashes(files: Iterable[Path]) -> list[Outcome]:
    """Two of `files` of one bench name, as `plan` and `run` refuse them."""
    return _clashes_of(FoundBenches({path: bench_name(path) for path in files}))


def _clashes_of(found: FoundBenches) -> list[Outcome]:
    clashes = (name_clash(name, files) for name, files in found.by_name().items())
    return [Outcome(Path(clash.path), clash) for clash in clashes if clash is not None]


def _outcome(path: Path, load: Callable[[Path], object]) -> Outcome:
    try:
        checked = load(path)
    except SpecError as exc:
        return Outcome(path, exc)
    return Outcome(path, notes=validate_notes(checked) if isinstance(checked, Bench) else ())


def validate_notes(bench: Bench) -> tuple[str, ...]:
    """What `validate` says of a bench that checks: that it cannot run here, and why,
    then the bench's own notes (`bench_notes`)."""
    missing = first_missing_import(bench)
    here = [not_usable_here(missing[1])] if missing is not None else []
    return (*here, *bench_notes(bench))


def _named_files(
    path: Path, found: Callable[[], dict[str, list[Path]]], extra: Sequence[Path]
) -> list[Path]:
    """The files `path` stands for: a folder, its bench (or profile) files; a name that
    is no path here (`validate ops-norm`, outside the checkout too), the files of the
    bench so named (two: both, a clash); a name of none is refused as `run` refuses it."""
    if path.exists() or is_bench_path(str(path)):
        return _files_of(path)
    by_name = found()
    if str(path) not in by_name:
        raise unknown_bench(str(path), list(by_name), extra,
                            also=" (nor a file or folder here)", file_option="")
    return by_name[str(path)]


def _files_of(path: Path) -> list[Path]:
    """A folder named as a path stands for its bench (or profile) files; one without any
    is refused as such (the loader would say it cannot read a folder)."""
    if not path.is_dir():
        return [path]
    files = yaml_files_in(path)
    if not files:
        suffixes = " or ".join(f"*{suffix}" for suffix in YAML_SUFFIXES)
        raise UserError(f"{shown_path(path)}: the folder holds no bench files ({suffixes})")
    return files


def _loader_for(path: Path) -> Callable[[Path], object]:
    """Hardware profiles live in a `hardware` folder; everything else is a bench."""
    return load_hardware if path.resolve().parent.name == "hardware" else load_and_check


def load_and_check(path: Path) -> Bench:
    bench = load_bench(path)
    check_bench(bench, path)
    if bench.data is not None:
        committed_data(bench, path)
    return bench


def list_benches(extra: Sequence[Path] = ()) -> list[dict[str, str]]:
    """Each bench found: its name, file and description (or why it does not load: a name
    two files define is shown once, as invalid, naming both; a bench that needs an optional
    dependency missing here, to load or to run, keeps its description, and says so under
    `unavailable`)."""
    rows = []
    for name, files in benches_by_name(extra).items():
        path = files[0]
        clash = name_clash(name, files)
        if clash is not None:
            rows.append({"name": name, "path": str(files[1]), "error": str(clash)})
            continue
        try:
            bench = load_bench(path, import_code=False)
            rows.append({"name": name, "path": str(path), "description": bench.description})
        except NeedsExtra as exc:  # not wrong, as `validate` says: its description, and why
            rows.append({"name": name, "path": str(path),
                         "description": str(read_document(path).data.get("description", "")),
                         "unavailable": exc.detail})
        except SpecError as exc:
            rows.append({"name": name, "path": str(path), "error": str(exc)})
    return rows


def print_benches(rows: Sequence[dict[str, str]], as_json: bool) -> None:
    """`list`'s lines: name, then description (or why it is invalid, or not usable here)."""
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        typer.echo(no_benches_found(), err=True)
    width = max((len(row["name"]) for row in rows), default=0)
    for row in rows:
        about = row.get("description") or f"(invalid: {row.get('error')})"
        about += f" ({not_usable_here(row['unavailable'])})" if "unavailable" in row else ""
        typer.echo(f"{row['name']:<{width}}  {about}")


def validate_paths(paths: Sequence[Path], extra: Sequence[Path]) -> list[Outcome]:
    """`validate PATHS`, or with none every bench found (and the profiles)."""
    if paths:
        return validate_files(paths, extra)
    found = search_benches(extra)  # once: the files, their names and clashes
    if not found.files:
        typer.echo(no_benches_found(), err=True)
    return validate_found(found)


def print_outcomes(outcomes: Sequence[Outcome], skip_extras: bool) -> bool:
    """`validate`'s lines: ok (and its notes) on stdout, each error on stderr. A bench
    that needs an optional dependency is skipped, not failed, where `skip_extras` (no
    file was named). True when nothing failed."""
    ok = True
    for path, error, notes in outcomes:
        if error is None:
            typer.echo(f"ok {shown_path(path)}")
            for line in notes:
                typer.echo(f"note: {shown_path(path)}: {line}")
        elif isinstance(error, NeedsExtra) and skip_extras:
            typer.echo(f"skipped {error.message}", err=True)
        else:
            typer.echo(error.message, err=True)
            ok = False
    return ok
