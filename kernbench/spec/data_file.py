"""A bench's `data:` file, the committed results fast mode redraws: where it is, and
whether it is there. `validate` and `run --fast` both ask here, so a file that is missing
is refused alike by the check and by the command that would read it."""

from __future__ import annotations

from pathlib import Path

from kernbench.errors import SpecError
from kernbench.spec.models import Bench
from kernbench.spec.yaml_document import field_error, shown_path


def data_error(bench_path: Path, message: str) -> SpecError:
    """A problem of the bench's data file, at the bench's `data:` line."""
    return field_error(bench_path, ("data",), message)


def committed_data(bench: Bench, bench_path: Path) -> Path:
    """The bench's data file, resolved from the bench's folder; no `data:`, a missing
    file or a folder is a `SpecError` at `data:`. Its content is the reader's to check."""
    if not bench.data:
        raise data_error(bench_path, "fast mode needs the bench's committed data file")
    data_path = (bench_path.parent / bench.data).resolve()
    shown = shown_path(data_path)
    if not data_path.exists():  # a run writes its own folder's results.json, never this
        raise data_error(bench_path, f"{shown} not found; copy a run's results.json "
                         "(or results.json.xz) there")
    if not data_path.is_file():
        raise data_error(bench_path, f"{shown} is not a results file")
    return data_path
