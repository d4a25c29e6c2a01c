"""A file kernbench writes appears whole or not at all: a disk that fills up as it is
written (here a file-size limit, which fails the write the same way) leaves no half file
where a reader finds it, and says so in one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ab_fixtures.sides import Sides
from test_ab_resume import interrupted_sequential

from kernbench.ab.run import resume_ab
from kernbench.errors import EXIT_USAGE

REPO = Path(__file__).resolve().parents[1]
GEMM = REPO / "benches" / "data" / "milestone-1h-gemm.json.xz"
LIMIT = 4096  # bytes: each file below is larger

WRITE = """
import resource, sys
from pathlib import Path
from kernbench.errors import UserError
from kernbench.results import model as results_io
from kernbench.render.export import write_csv
from kernbench.render.report import write_report

writer = {"csv": write_csv, "report": write_report}[sys.argv[1]]
results = results_io.load(Path(sys.argv[2]))
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[4]), resource.RLIM_INFINITY))
try:
    writer(results, Path(sys.argv[3]))
except UserError as exc:
    print(exc.message, file=sys.stderr)
    sys.exit(exc.code)
"""


@pytest.mark.parametrize("writer, first", [("csv", "results.csv"), ("report", "report.md")])
def test_a_run_output_that_does_not_fit_leaves_no_half_file(
    tmp_path: Path, writer: str, first: str
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", WRITE, writer, str(GEMM), str(tmp_path), str(LIMIT)],
        capture_output=True, text=True, timeout=120,
    )
    assert (ended.returncode, ended.stderr) == (
        EXIT_USAGE, f"{tmp_path / first}: cannot write: File too large\n")
    assert list(tmp_path.iterdir()) == []  # neither the file cut short nor a temporary one


def test_an_export_that_does_not_fit_is_one_line_and_no_file(tmp_path: Path) -> None:
    out = tmp_path / "gemm.csv"
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, -1))"
    ended = subprocess.run(
        [sys.executable, "-c", f"{limit}; from kernbench.__main__ import main; main()",
         "export", str(GEMM), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert (ended.returncode, ended.stderr) == (
        EXIT_USAGE, f"{out}: cannot write: File too large\n")
    assert list(tmp_path.iterdir()) == []


KILLED_WRITING = """
import os, sys
from pathlib import Path
from kernbench.results import atomic
with atomic.replaced(Path(sys.argv[1])) as tmp:
    tmp.write_text("half of it")
    os._exit(9)  # as a kill -9 before the rename
"""


def killed_writing(path: Path) -> Path:
    """The temporary that a process killed as it wrote `path` left beside it."""
    subprocess.run([sys.executable, "-c", KILLED_WRITING, str(path)], check=False,
                   timeout=60)
    (left,) = [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]
    return left


def test_an_ab_resumed_removes_the_temporaries_its_kill_left(tmp_path: Path) -> None:
    # Found by test_ab_kill_resume (seeds 3712427778 interleaved, 589715536 sequential):
    # an A/B killed as it drew ab.png, then resumed, ended with `.ab.png.XXXXXXXX` in it.
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    left = [killed_writing(folder / name) for name in ("ab.png", "pins.json")]
    (folder / ".keep").write_text("")  # hidden, and no temporary
    resume_ab(folder, run_side=Sides(), echo=lambda _: None)
    assert [path for path in left if path.exists()] == []
    assert (folder / ".keep").is_file() and (folder / "ab.json").is_file()


# A side's log is written as the side runs (a reader follows it live); nothing else kernbench
# writes is left to be read half-written.
STREAMED = {("kernbench/ab/sides.py", "request.log_path.open(\"wb\")")}
IN_PLACE = re.compile(r"write_(text|bytes)\(|\bopen\([^)]*[\"']w")


def test_every_file_kernbench_writes_goes_through_atomic() -> None:
    found = []
    for source in sorted((REPO / "kernbench").rglob("*.py")):
        name = source.relative_to(REPO).as_posix()
        if name == "kernbench/results/atomic.py":
            continue
        for number, line in enumerate(source.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if "atomic." in code or "tmp." in code or "tmp," in code:
                continue
            if IN_PLACE.search(code) and not any(
                    name == where and text in code for where, text in STREAMED):
                found.append(f"{name}:{number}: {code.strip()}")
    assert found == []
