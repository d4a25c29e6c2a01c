"""A bench whose cells import a module not installed here (torch, on a core install) is
refused by `run` and `ab` in one line naming what to install, before any folder is made;
`list` says it is not usable here and `plan` notes why; fast mode, which imports no torch,
still draws its committed data. Before, `run --bench ops-norm` without torch made a run
folder and failed every cell on `ModuleNotFoundError: No module named 'torch'`, exit 1.

torch is made missing by a None in sys.modules, which `importlib.util.find_spec` reports
as not found, as on a machine without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_helpers import invoke, nap_bench

from kernbench.errors import EXIT_USAGE

REPO = Path(__file__).resolve().parent.parent
HINT = "(pip install 'kernbench[torch]')"


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.chdir(REPO)  # errors show a bench's path from here: benches/NAME.yaml


def line_of(path: Path, start: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                if text.startswith(start))


@pytest.mark.parametrize("name", ["ops-norm", "ops-attention", "ab-known-effect"])
def test_a_shipped_torch_bench_is_refused_in_one_line_without_torch(
    name: str, tmp_path: Path, no_torch: None
) -> None:
    bench = Path("benches", f"{name}.yaml")
    code, out, err = invoke("run", "--bench", name, "--device", "cpu",
                            "--out", str(tmp_path / "out"))
    assert code == EXIT_USAGE
    assert err == (f"{bench}:{line_of(bench, 'requires:')}: requires.imports: "
                   f"needs torch, not installed here {HINT}\n")
    assert not (tmp_path / "out").exists()


def test_a_collective_bench_needs_torch_without_saying_so(tmp_path: Path,
                                                          no_torch: None) -> None:
    bench = Path("benches", "milestone-1h-ccl.yaml")
    code, _, err = invoke("run", "--bench", "milestone-1h-ccl", "--device", "cpu",
                          "--out", str(tmp_path / "out"))
    assert code == EXIT_USAGE
    assert err == (f"{bench}:{line_of(bench, 'kernel:')}: kernel: "
                   f"needs torch, not installed here {HINT}\n")
    assert not (tmp_path / "out").exists()


def test_an_ab_of_a_module_not_installed_is_refused_before_its_folder(tmp_path: Path) -> None:
    bench = nap_bench(tmp_path, "requires: {imports: [kernbench_no_such_module]}\n")
    code, _, err = invoke("ab", "--bench", str(bench), "--switch", "KB_X", "--device", "cpu",
                          "--rounds", "2", "--out", str(tmp_path / "ab"))
    assert code == EXIT_USAGE
    assert err == (f"{bench}:{line_of(bench, 'requires:')}: requires.imports: "
                   "needs kernbench_no_such_module, not installed here\n")
    assert not (tmp_path / "ab").exists()


def test_list_and_plan_say_why_a_bench_cannot_run_here(no_torch: None) -> None:
    code, out, _ = invoke("list")
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith("ops-norm ")]
    assert row.endswith(f"(not usable here: needs torch, not installed here {HINT})")
    code, out, _ = invoke("plan", "--bench", "ops-norm", "--device", "cpu")
    assert code == 0
    note = f"note: not usable here: needs torch, not installed here {HINT}"  # as `list`
    assert note in " ".join(out.split())  # as the console wraps it


def test_fast_mode_still_draws_a_torch_benchs_data_without_torch(tmp_path: Path,
                                                                 no_torch: None) -> None:
    code, out, err = invoke("run", "--bench", "ops-norm", "--fast",
                            "--out", str(tmp_path / "fast"))
    assert code == 0, err
    assert "ops-norm: fast mode" in out
    assert "changed" not in out + err  # requires: is not a measured field
    assert (tmp_path / "fast" / "figures" / "bandwidth.png").is_file()


TORCH_BENCHES = ["ops-norm", "ops-attention", "ab-known-effect", "ops-moe-topk",
                 "milestone-1h-ccl"]


def test_list_and_run_word_a_missing_torch_alike_for_every_bench(tmp_path: Path,
                                                                  no_torch: None) -> None:
    # Before, two rules worded it two ways: ops-moe-* and milestone-1h-ccl showed
    # "cannot import 'torch': ..." in `list`, the others "needs torch, not installed here".
    code, out, _ = invoke("list")
    assert code == 0
    wording = f"needs torch, not installed here {HINT}"
    for name in [n for n in TORCH_BENCHES if Path("benches", f"{n}.yaml").exists()]:
        (row,) = [line for line in out.splitlines() if line.startswith(f"{name} ")]
        assert row.endswith(f"(not usable here: {wording})"), row
        code, _, err = invoke("run", "--bench", name, "--device", "cpu",
                              "--out", str(tmp_path / name))
        assert code == EXIT_USAGE and err.endswith(f": {wording}\n"), err
