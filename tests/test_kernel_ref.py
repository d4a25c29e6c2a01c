"""The `kernel:` field: a file name or a path where a module name belongs is one line
that says what the field takes and what was meant."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import spec_error_of

from kernbench.spec.loader import load_bench

FACTORY = "def make(work_us: float, device: str = 'cpu'):\n    return lambda: None\n"
TAKES = (
    "expected a built-in kernel (collective, gemm, sleep) or module:factory, the module as "
    "an import names it (no .py, no path)"
)


def bench(kernel: str) -> str:
    return f"name: b\ndescription: d\nkernel: {kernel}\naxes:\n  work_us: [1]\n"


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        ("good.py:make", "name the module, not its file: drop the .py ('good:make')"),
        ("./good.py:make", "name the module, not its file: drop the .py ('good:make')"),
        ("good.make", f"{TAKES}; did you mean 'good:make'?"),
        ("./good:make", f"{TAKES}; did you mean 'good:make'?"),
        ("sub/good:make", f"{TAKES}; did you mean 'sub.good:make'?"),
        ("../good:make", TAKES),
        ("/abs/good:make", TAKES),
        ("good.py", TAKES),
        ("Gemm", TAKES),
    ],
)
def test_a_misnamed_kernel_says_what_the_field_takes(
    tmp_path: Path, kernel: str, message: str
) -> None:
    (tmp_path / "good.py").write_text(FACTORY)
    error = spec_error_of(tmp_path, bench(kernel))
    assert error == f"3: kernel: {message} (got {kernel!r})"


def test_the_suggested_module_path_loads(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "good.py").write_text(FACTORY)
    path = tmp_path / "bench.yaml"
    path.write_text(bench("sub.good:make"))
    assert load_bench(path).kernel == "sub.good:make"
