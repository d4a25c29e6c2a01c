"""Op benches end to end through the CLI on the CPU: the issue's topk YAML (no Python
file) validates, plans and runs; ops-moe runs small; a flag_gems cell without FlagGems
fails with its reason while the run goes on."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import invoke, new_project
from test_op_spec import TOPK

from kernbench.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parent.parent
QUICK = "timer: {warmup_s: 0.0, budget_s: 0.02, min_samples: 3}\n"
ONE_CELL_PER_DTYPE = ("--only", "rows=64", "--only", "cols=4096", "--only", "k=8")


def cells(out: Path) -> dict[str, dict[str, object]]:
    data = json.loads((out / "results.json").read_text())
    return {cell["id"]: cell["rounds"][0] for cell in data["cells"]}


@pytest.mark.slow
def test_the_issue_topk_bench_runs_on_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    (root / "benches" / "topk.yaml").write_text(TOPK + QUICK)
    assert invoke("validate", "benches/topk.yaml")[0] == EXIT_OK
    code, out, _ = invoke("plan", "--bench", "topk", "--device", "cpu")
    assert code == EXIT_OK and "16 cells" in out
    code, out, err = invoke(
        "run",
        "--bench",
        "topk",
        "--device",
        "cpu",
        *ONE_CELL_PER_DTYPE,
        "--out",
        "run",
    )
    assert code == EXIT_OK, out + err
    measured = cells(root / "run")
    assert set(measured) == {
        "default/rows=64,cols=4096,k=8,dtype=fp32",
        "default/rows=64,cols=4096,k=8,dtype=bf16",
    }
    for result in measured.values():
        assert result["status"] == "ok" and result["median_s"] > 0
        assert result["extra"]["op"] == "torch.topk" and result["extra"]["backend"] == "torch"


@pytest.mark.slow
def test_ops_moe_masked_select_runs_small_and_skips_flag_gems_on_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    shutil.copy(REPO / "benches" / "ops-moe-masked-select.yaml", root / "benches")
    code, out, err = invoke(
        "run", "--bench", "ops-moe-masked-select", "--device", "cpu", "--out", "run"
    )
    assert code == EXIT_OK, out + err
    measured = cells(root / "run")
    assert measured and all(cell_id.startswith("torch/") for cell_id in measured)
    assert all(r["check"]["ok"] and r["check"]["tolerance"] == 0 for r in measured.values())


@pytest.mark.slow
def test_a_flag_gems_cell_fails_with_its_reason_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("flag_gems") is not None:
        pytest.skip("FlagGems is installed here")
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    (root / "benches" / "topk.yaml").write_text(
        TOPK + QUICK + "variants: {eager: {backend: torch}, gems: {backend: flag_gems}}\n"
    )
    code, out, err = invoke(
        "run",
        "--bench",
        "topk",
        "--device",
        "cpu",
        *ONE_CELL_PER_DTYPE,
        "--only",
        "dtype=fp32",
        "--out",
        "run",
    )
    assert code == EXIT_FAILED
    measured = cells(root / "run")
    assert measured["eager/rows=64,cols=4096,k=8,dtype=fp32"]["status"] == "ok"
    gems = measured["gems/rows=64,cols=4096,k=8,dtype=fp32"]
    assert gems["status"] == "failed"
    assert gems["reason"].startswith(
        "BackendUnavailable: backend flag_gems: cannot import flag_gems"
    )


def test_a_bad_op_bench_is_exit_2_at_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_project(tmp_path, monkeypatch, bench_extra=None)
    (root / "benches" / "topk.yaml").write_text(TOPK.replace("dim: -1", "dimm: -1"))
    code, _, err = invoke("validate", "benches/topk.yaml")
    assert code == EXIT_USAGE
    assert err.startswith("benches/topk.yaml:10: args.dimm: torch.topk takes no 'dimm'")
