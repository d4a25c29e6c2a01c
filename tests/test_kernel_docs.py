"""docs/kernels.md's examples, as written: every block that starts with `# file: NAME` is
written out, its factories called, its benches validated, and (slow) measured."""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from script_modules import load_module

from kernbench.commands.run import RunRequest, run
from kernbench.commands.validate import validate_files
from kernbench.errors import EXIT_OK
from kernbench.kernels.base import Kernel, as_kernel
from kernbench.plan import plan
from kernbench.results import model as results_io
from kernbench.spec.loader import load_bench

DOC = Path(__file__).resolve().parent.parent / "docs" / "kernels.md"
BLOCK = re.compile(r"^```(?:python|yaml)\n# file: (\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
BENCHES = ("axpy", "axpy_checked", "blocked", "staged", "softmax")
OP_BENCHES = ("moe_gate", "embedding")  # YAML only: no module


def doc_files() -> dict[str, str]:
    return {name: f"# file: {name}\n{body}" for name, body in BLOCK.findall(DOC.read_text())}


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    for name, text in doc_files().items():
        (tmp_path / name).write_text(text)
    return tmp_path


def load(folder: Path, name: str) -> ModuleType:
    return load_module(folder / f"{name}.py", f"doc_{name}")


def made(folder: Path, name: str) -> list[Kernel]:
    """The kernel of every cell of the example's bench, as the worker would make it."""
    factory = load(folder, name).make
    cells = plan(load_bench(folder / f"{name}.yaml"), "cpu")
    return [as_kernel(factory(**cell.params)) for cell in cells]


def test_the_doc_holds_each_form_as_a_module_and_a_bench() -> None:
    expected = [f"{n}.{ext}" for n in BENCHES for ext in ("py", "yaml")]
    assert sorted(doc_files()) == sorted([*expected, *(f"{n}.yaml" for n in OP_BENCHES)])


def test_every_example_bench_validates(examples: Path) -> None:
    names = [*BENCHES, *OP_BENCHES] if importlib.util.find_spec("torch") else BENCHES
    outcomes = validate_files([examples / f"{name}.yaml" for name in names])
    assert [outcome.error for outcome in outcomes] == [None] * len(names)


def test_a_plain_callable_has_no_check(examples: Path) -> None:
    kernels = made(examples, "axpy")
    assert len(kernels) == 4 and all(k.check is None and not k.tunable for k in kernels)
    kernels[0].run()


def test_a_check_passes(examples: Path) -> None:
    for kernel in made(examples, "axpy_checked"):
        assert kernel.check is not None and kernel.check().ok


def test_a_check_of_a_kernel_that_writes_nothing_fails(examples: Path) -> None:
    source = (examples / "axpy_checked.py").read_text()
    lazy = source.replace("np.multiply(x, 2.0, out=out)", "pass")
    lazy = lazy.replace("np.add(out, y, out=out)", "pass")
    assert lazy != source
    (examples / "lazy.py").write_text(lazy)
    check = load(examples, "lazy").make(n=64, dtype="fp32", device="cpu").check
    assert math.isnan(check().rel_err) and not check().ok


def test_every_config_builds_a_kernel_that_passes_the_check(examples: Path) -> None:
    for kernel in made(examples, "blocked"):
        assert kernel.tunable and kernel.build is not None and kernel.configs
        for config in kernel.configs:
            built = as_kernel(kernel.build(config))
            built.run()
            assert built.info == config
        assert kernel.check is not None and kernel.check().ok


def test_stages_are_reported_after_each_call(examples: Path) -> None:
    for kernel in made(examples, "staged"):
        kernel.run()
        assert kernel.stage_times is not None
        assert set(kernel.stage_times()) == set(kernel.stages) == {"copy_in", "gemm", "copy_out"}
        assert kernel.check is not None and kernel.check().ok


@pytest.mark.slow
def test_every_example_bench_runs(examples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MILESTONE_FAST", raising=False)
    ops = OP_BENCHES if importlib.util.find_spec("torch") else ()
    for name in (*BENCHES, *ops):
        out = examples / "runs" / name
        assert run(RunRequest(bench=str(examples / f"{name}.yaml"), out=out,
                              device="cpu", figures=name == "staged")) == EXIT_OK
        results = results_io.load(out / "results.json")
        assert {cell.status for cell in results.cells} == {"ok"}
        checks = [r.check for cell in results.cells for r in cell.rounds]
        assert all(c is None for c in checks) if name == "axpy" else all(c and c.ok for c in checks)
    assert (examples / "runs" / "staged" / "figures" / "stage_breakdown.png").is_file()
    assert not (examples / "pins").exists()  # the pins stayed in the run's folder


def teardown_module() -> None:
    for name in [*BENCHES, "lazy"]:
        sys.modules.pop(f"doc_{name}", None)
