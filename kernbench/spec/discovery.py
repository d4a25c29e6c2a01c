"""Find benches: the project's `benches/`, then `--bench-dir` folders, then
`KERNBENCH_BENCH_PATH` (folders separated by `os.pathsep`), then, outside a checkout only,
the benches an installed wheel ships (the repository's `benches/`, mapped into the package
at build time: pyproject.toml). A bench of those folders shadows the shipped one of its
name; in a checkout the shipped folder is not searched, so its `benches/` alone counts.

A bench is any `*.yaml`/`*.yml` file directly in one of those folders. Discovery reads
only each file's `name` key, so one broken file never hides the others: a file whose
name cannot be read is listed under its file stem, and loading it reports its error.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from kernbench.errors import MEANT_CUTOFF, SpecError, UserError
from kernbench.spec.loader import load_bench
from kernbench.spec.models import YAML_SUFFIXES, Bench
from kernbench.spec.yaml_document import read_document, shown_path

BENCH_PATH_ENV = "KERNBENCH_BENCH_PATH"
_PROJECT_NAME = re.compile(r'^name\s*=\s*["\']kernbench["\']\s*$', re.MULTILINE)
# A top-level `name: x` line (plain or quoted, maybe a comment after): enough to find a
# bench by name without parsing every file; the file found is then parsed in full.
_NAME_LINE = re.compile(
    r"""^name:[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s#'"]+))[ \t]*(?:\#.*)?\r?$""",
    re.MULTILINE,
)
_NAME_SEARCH_BYTES = 64 * 1024


def project_root() -> Path:
    """The folder holding benches/ and configs/: the kernbench checkout in use (see
    `checkout_root`), else the working directory (an installed wheel has no project of its
    own: the folder it is run from plays that part)."""
    return checkout_root() or Path.cwd().resolve()


def checkout_root() -> Path | None:
    """The nearest kernbench checkout above the working directory, else the checkout the
    package runs from (an editable install), else None (an installed wheel)."""
    return project_holding(Path.cwd()) or source_tree()


def project_holding(folder: Path) -> Path | None:
    """The nearest kernbench checkout at or above `folder`, else None."""
    here = Path(folder).resolve()
    for above in (here, *here.parents):
        if (above / "benches").is_dir() and _is_kernbench_project(above / "pyproject.toml"):
            return above
    return None


def source_tree() -> Path | None:
    """The checkout holding this very package, or None when it runs from an installed wheel."""
    folder = Path(__file__).resolve().parents[2]
    return folder if _is_kernbench_project(folder / "pyproject.toml") else None


def _is_kernbench_project(pyproject: Path) -> bool:
    try:
        return bool(_PROJECT_NAME.search(pyproject.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError):
        return False


def bench_dirs(extra: Sequence[Path] = ()) -> list[Path]:
    """The folders searched, in order, each once; folders that do not exist are skipped,
    except an explicit --bench-dir, which is an error."""
    folders = [project_root() / "benches"]
    for folder in extra:
        if not Path(folder).is_dir():
            raise UserError(f"--bench-dir {folder}: not a folder")
        folders.append(Path(folder))
    return existing_once([*folders, *path_variable(BENCH_PATH_ENV)])


def shipped_bench_dir() -> Path:
    # kernbench is installed as files, never zipped: the resource is a real folder.
    return Path(str(resources.files("kernbench").joinpath("data", "benches")))


def shipped_benches_searched() -> Path | None:
    """The shipped benches' folder where it is searched: an installed wheel run outside
    a kernbench checkout (a checkout has its own `benches/`, and no shipped copy)."""
    folder = shipped_bench_dir()
    return folder if checkout_root() is None and folder.is_dir() else None


def is_shipped(bench_path: Path) -> bool:
    """Whether the bench file is one the installed package ships (read-only, as
    site-packages is: `--save-pins` refuses to write beside it)."""
    return Path(bench_path).resolve().parent == shipped_bench_dir().resolve()


def path_variable(name: str) -> list[Path]:
    """The folders a search-path variable lists, `os.pathsep` between them."""
    return [Path(part) for part in os.environ.get(name, "").split(os.pathsep) if part]


def existing_once(folders: Sequence[Path]) -> list[Path]:
    """The folders that exist, in order, each once (two spellings of one folder too)."""
    unique: dict[Path, Path] = {}
    for folder in folders:
        if folder.is_dir():
            unique.setdefault(folder.resolve(), folder)
    return list(unique.values())


def no_benches_found() -> str:
    """What a search that found no bench says: where it looked."""
    shipped = shipped_benches_searched()
    return (f"no benches found in {project_root() / 'benches'}, --bench-dir, "
            f"{BENCH_PATH_ENV}{f' or {shipped}' if shipped else ''} (give a bench file's "
            "path, or run from a kernbench checkout)")


def bench_files(extra: Sequence[Path] = ()) -> list[Path]:
    """Every bench file in the searched folders, sorted within each folder; then the
    shipped benches (where searched) that no bench of those folders shadows by name."""
    return _bench_files(extra, bench_name)


def _bench_files(extra: Sequence[Path], name_of: Callable[[Path], str]) -> list[Path]:
    """`bench_files`, reading a file's name with `name_of` (a caller that reads the names
    too passes a cached reader, so no file is parsed twice)."""
    files = [path for folder in bench_dirs(extra) for path in yaml_files_in(folder)]
    shipped = shipped_benches_searched()
    if shipped is not None:
        taken = {name_of(path) for path in files}
        files += [path for path in yaml_files_in(shipped) if name_of(path) not in taken]
    return files


def yaml_files_in(folder: Path) -> list[Path]:
    """The YAML files of one folder (not its subfolders), sorted: its bench files, or its
    hardware profiles."""
    return sorted(p for p in folder.iterdir() if p.suffix in YAML_SUFFIXES and p.is_file())


@dataclass(frozen=True)
class FoundBenches:
    """One search's bench files (`bench_files`), in search order, each with its name."""

    files: dict[Path, str]  # each file -> its bench name

    def by_name(self) -> dict[str, list[Path]]:
        """Bench name -> its files in search order, sorted by name. A name of more than
        one file is a clash (`name_clash`), which `list` shows beside the other benches."""
        found: dict[str, list[Path]] = {}
        for path, name in self.files.items():
            found.setdefault(name, []).append(path)
        return dict(sorted(found.items()))


def search_benches(extra: Sequence[Path] = ()) -> FoundBenches:
    """The bench files and their names, the folders searched once and each file's name
    read once (`validate` checks the files and their names from one search)."""
    name_of = cache(bench_name)
    return FoundBenches({path: name_of(path) for path in _bench_files(extra, name_of)})


def benches_by_name(extra: Sequence[Path] = ()) -> dict[str, list[Path]]:
    """`FoundBenches.by_name` of a search."""
    return search_benches(extra).by_name()


def name_clash(name: str, paths: Sequence[Path]) -> SpecError | None:
    """Two files of one bench name: which one a name means would depend on the search
    order (a `--bench-dir` bench hidden by the project's one), so every command refuses it;
    the error is at the second file's `name`, and names the others."""
    if len(paths) < 2:
        return None
    others = " and ".join(shown_path(p) for p in paths if p != paths[1])
    return SpecError(shown_path(paths[1]), _name_line(paths[1]), "name",
                     f"bench {name!r} is also defined in {others}")


def bench_name(path: Path) -> str:
    """The file's `name` key, or its stem where the name cannot be read."""
    try:
        data = read_document(path).data
    except SpecError:
        return path.stem
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else path.stem


def _name_line(path: Path) -> int | None:
    try:
        return read_document(path).line(("name",))
    except SpecError:
        return None


def is_bench_path(name: str) -> bool:
    return name.endswith(YAML_SUFFIXES) or os.sep in name


def find_bench(name: str, extra: Sequence[Path] = ()) -> tuple[Bench, Path]:
    """The bench called `name` (or the bench file at path `name`), loaded and checked.

    Only the files whose `name:` line says NAME are parsed in full (and those without
    such a line, to read their name; outside a checkout, every file, to know which
    shipped bench it shadows); every file is parsed only when none is found (an unknown
    name). Two files of the name are an error, as in `validate` (`list` shows
    them as invalid); two files of another name are not.
    """
    if is_bench_path(name):
        path = Path(name)
        if not path.exists():
            raise UserError(f"{name}: bench file not found")
        if not path.is_file():
            raise UserError(f"{name}: cannot read: not a regular file")
        return load_bench(path), path
    name_of = cache(bench_name)  # one parse per file, however many of the steps read it
    files = _bench_files(extra, name_of)
    named = [path for path in files if _quick_name(path, name_of) == name]
    clash = name_clash(name, named)
    if clash is not None:
        raise clash
    if named:
        bench = load_bench(named[0])
        if bench.name == name:
            return bench, named[0]
    # A clash of another name is not this bench's error.
    known = FoundBenches({path: name_of(path) for path in files}).by_name()
    if name not in known:
        raise unknown_bench(name, list(known), extra)
    clash = name_clash(name, known[name])
    if clash is not None:
        raise clash
    return load_bench(known[name][0]), known[name][0]


def unknown_bench(name: str, known: Sequence[str], extra: Sequence[Path] = (),
                  also: str = "", file_option: str = "--bench ") -> UserError:
    """The one line every command gives a bench name no searched file has: the closest
    known name, the known ones, and where the working folder holds it unsearched (`also`
    after the name: what else it is not; `file_option`: how the command takes a file)."""
    if not known:
        return UserError(f"unknown bench {name!r}{also}; {no_benches_found()}")
    meant = difflib.get_close_matches(name, known, n=1, cutoff=MEANT_CUTOFF)
    guess = f"did you mean {meant[0]!r}? " if meant else ""
    return UserError(f"unknown bench {name!r}{also}; {guess}known: {', '.join(known)}"
                     f"{_unsearched_here(name, extra, file_option)}")


def _unsearched_here(name: str, extra: Sequence[Path], file_option: str) -> str:
    """A hint where the working directory's `benches/`, or the working directory itself,
    holds `name` but is not searched (a checkout's benches are, not the folder kernbench
    is run from; a new user runs from their bench's folder): else nothing."""
    searched = {d.resolve() for d in bench_dirs(extra)}
    for here in (Path("benches"), Path(".")):
        if not here.is_dir() or here.resolve() in searched:
            continue
        files = yaml_files_in(here)
        named = [path for path in files if _quick_name(path) == name]
        shown = "this folder" if here == Path(".") else f"{here}/ here"
        unsearched = f"; {shown} is not searched (this kernbench reads " \
            f"{project_root() / 'benches'})"
        if named:
            return (f"{unsearched}: give --bench-dir {here}, or the file: "
                    f"{file_option}{named[0]}")
        stems = [path for path in files if path.stem == name]
        if stems:  # `--bench softmax` for softmax.yaml, a bench of another name
            return (f"{unsearched}, and {stems[0]} names its bench "
                    f"{_quick_name(stems[0])!r}: give the file: {file_option}{stems[0]}")
    return ""


def _quick_name(path: Path, name_of: Callable[[Path], str] = bench_name) -> str:
    """The file's bench name, from its `name:` line where it has one (no parsing), else
    read by `name_of`."""
    return _declared_name(path) or name_of(path)


def _declared_name(path: Path) -> str | None:
    """The value of the file's top-level `name:` line, read without parsing the YAML."""
    try:
        with path.open("rb") as stream:
            head = stream.read(_NAME_SEARCH_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    match = _NAME_LINE.search(head)
    return next((group for group in match.groups() if group), None) if match else None
