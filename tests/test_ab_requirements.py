"""`kernbench ab` refuses what `kernbench run` refuses of the bench's `requires:` and the
device, before the A/B's folder or any side exists: a bench that needs CUDA ran six rounds
of sides that all failed on the CPU, and `--device cuda` on a machine without one left a
half-made A/B folder behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ab_fixtures.sides import BENCH, Sides
from test_ab_resume import interrupted_sequential

from kernbench.ab.run import resume_ab, run_ab
from kernbench.errors import UserError
from kernbench.execute import requirements


@pytest.fixture(autouse=True)
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requirements, "_cuda_available", lambda: False)


def test_a_bench_that_requires_cuda_is_refused_on_the_cpu_at_its_line(tmp_path: Path) -> None:
    bench = tmp_path / "fake-ab.yaml"
    bench.write_text(BENCH + "requires: {device: cuda}\n")
    requires_line = len(BENCH.splitlines()) + 1
    sides = Sides()
    with pytest.raises(UserError) as refused:
        run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=sides,
               echo=lambda line: None)
    assert str(refused.value) == (
        f"{bench}:{requires_line}: requires.device: the bench needs cuda, not cpu")
    assert sides.ran == []
    assert not (tmp_path / "ab").exists()


def test_cuda_asked_for_without_cuda_is_refused_before_the_folder_is_made(
    tmp_path: Path,
) -> None:
    bench = tmp_path / "fake-ab.yaml"
    bench.write_text(BENCH)
    with pytest.raises(UserError, match="^--device: cuda asked for, but torch with a CUDA "
                                        "device is not here$"):
        run_ab(str(bench), out=tmp_path / "ab", device="cuda", run_side=Sides(),
               echo=lambda line: None)
    assert not (tmp_path / "ab").exists()


def test_a_cuda_ab_resumed_without_cuda_is_refused_even_with_force(tmp_path: Path) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    manifest = folder / "ab-run.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "device": "cuda"}))
    sides = Sides()
    with pytest.raises(UserError, match="^--device: cuda asked for"):
        resume_ab(folder, run_side=sides, echo=lambda line: None, force=True)
    assert sides.ran == []
    assert (folder / "r2_A" / "run.json").is_file()  # the side cut short is not cleared
