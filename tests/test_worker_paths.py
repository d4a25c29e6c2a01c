"""Every path handed to a worker is absolute: a kernel's `os.chdir` cannot send the
journal elsewhere."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_OK
from kernbench.execute.journal import TASK
from kernbench.results import model as results_io

pytestmark = pytest.mark.slow

FACTORY = '''
import os

def make(n, elsewhere, **_):
    os.makedirs(elsewhere, exist_ok=True)
    os.chdir(elsewhere)
    return lambda: sum(range(n))
'''


def test_a_kernel_that_changes_directory_keeps_the_journal_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "wander.py").write_text(FACTORY)
    (tmp_path / "b" / "wander.yaml").write_text(textwrap.dedent(f"""\
        name: wander
        description: a kernel that changes directory
        kernel: wander:make
        axes: {{n: [8, 16, 32]}}
        variants: {{v: {{elsewhere: "{tmp_path / 'elsewhere'}"}}}}
        timer: {{warmup_s: 0.0, budget_s: 0.01, min_samples: 3}}
        rounds: 2
        """))
    monkeypatch.chdir(tmp_path)
    code = run(RunRequest(bench="b/wander.yaml", out=Path("out"), device="cpu"))
    assert code == EXIT_OK
    results = results_io.load(tmp_path / "out" / "results.json")
    assert [c.status for c in results.cells] == ["ok"] * 3
    assert not (tmp_path / "elsewhere" / "out").exists()
    task = TASK.read(tmp_path / "out" / "tasks" / "r2.json")
    paths = [task.bench_path, task.journal_dir, *task.pins_read, *task.pins_write]
    assert all(Path(p).is_absolute() for p in paths)
