"""Fast mode on the committed data: the golden check CI runs on every change.

The committed H200 results are re-rendered through the CLI and the plotted data (not
the pixels) must equal the golden copies in tests/golden/. After a deliberate change
to the figures or the data, refresh them with:
    MILESTONE_FAST=1 kernbench run --bench NAME --out /tmp/x  and copy figures/*.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_OK, EXIT_USAGE

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
FIGURES = {
    "milestone-1h-gemm": ["throughput", "utilization", "theory_vs_measured", "stage_breakdown"],
    "milestone-1h-ccl": ["busbw", "latency"],
}


@pytest.mark.parametrize("bench", sorted(FIGURES))
def test_fast_mode_redraws_the_committed_figures(
    bench: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("MILESTONE_FAST", "1")
    result = CliRunner().invoke(cli.app, ["run", "--bench", bench, "--out", str(tmp_path)])
    assert result.exit_code == EXIT_OK, result.output
    for name in FIGURES[bench]:
        png = tmp_path / "figures" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
        drawn = json.loads((tmp_path / "figures" / f"{name}.json").read_text())
        golden = json.loads((GOLDEN / f"{bench}-{name}.json").read_text())
        assert drawn == golden, f"{name}: plotted data differs from tests/golden"
    # Fields kernbench added since the data was measured (op benches' `args`, the timer's
    # `turns`) are no difference: each bench's data was measured with its timer as it is.
    assert "changed since" not in result.stderr, result.stderr


def test_fast_mode_names_the_fields_changed_since_the_data_was_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = (REPO / "benches/milestone-1h-ccl.yaml").read_text()
    (tmp_path / "data").mkdir()
    (tmp_path / "data/milestone-1h-ccl.json").write_bytes(
        (REPO / "benches/data/milestone-1h-ccl.json").read_bytes())
    (tmp_path / "ccl.yaml").write_text(bench.replace("budget_s: 0.2", "budget_s: 0.3"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, ["run", "--bench", "ccl.yaml", "--fast", "--out", "o"])
    assert result.exit_code == EXIT_OK, result.output
    assert result.stderr == ("note: ccl.yaml's timer changed since milestone-1h-ccl.json was "
                             "measured; re-run the bench to refresh it\n")


def test_fast_mode_says_which_options_it_ignores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(cli.app, ["run", "--bench", "milestone-1h-ccl", "--fast",
                                          "--rounds", "5", "--only", "dtype=bf16",
                                          "--out", str(tmp_path)])
    assert result.exit_code == EXIT_OK, result.output
    assert result.stderr.startswith("note: fast mode draws the bench's committed data as it "
                                    "is: --rounds, --only ignored\n")


def test_committed_data_names_the_h200() -> None:
    from kernbench.results import model as results

    gemm = results.load(REPO / "benches/data/milestone-1h-gemm.json.xz")
    assert gemm.provenance["device_name"] == "NVIDIA H200"
    assert all(cell.status == "ok" for cell in gemm.cells)
    triton = [c for c in gemm.cells if c.variant == "triton"]
    # Round 1 records a pin or replays the committed pins file; later rounds always replay.
    assert triton and all(c.rounds[0].pin_action in ("recorded", "replayed") for c in triton)
    assert gemm.rounds == 3  # the bench's own rounds
    assert all(r.pin_action == "replayed" for c in triton for r in c.rounds[1:])
    ccl = results.load(REPO / "benches/data/milestone-1h-ccl.json")
    assert ccl.provenance["device_name"] == "NVIDIA H200"
    assert all(cell.rounds[0].check and cell.rounds[0].check.ok for cell in ccl.cells)


@pytest.mark.slow
def test_fast_mode_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from kernbench.commands.run import RunRequest, run; "
        f"run(RunRequest(bench='milestone-1h-gemm', fast=True, out=Path({str(tmp_path)!r}))); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    assert out.split()[-1] == "False"


@pytest.mark.parametrize("command", [["run", "--fast", "--bench"], ["validate"]])
def test_a_missing_data_file_is_one_line_at_data_in_fast_mode_and_validate(
    tmp_path: Path, command: list[str]
) -> None:
    bench = tmp_path / "nodata.yaml"
    bench.write_text("name: nodata\ndescription: d\nkernel: sleep\ndata: missing.json\n")
    result = CliRunner().invoke(cli.app, [*command, str(bench)])
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE, f"{bench}:4: data: {tmp_path / 'missing.json'} not found; copy a run's "
                    "results.json (or results.json.xz) there\n")


@pytest.mark.parametrize(
    ("data", "why"),
    [(".", "{folder} is not a results file"),
     ("broken.json", "{folder}/broken.json:1: not valid JSON: Expecting value"),
     (str(REPO / "benches" / "data" / "milestone-1h-ccl.json"),
      "milestone-1h-ccl.json holds bench 'milestone-1h-ccl', not 'other'")],
)
def test_fast_mode_names_the_bench_and_its_data_field_when_the_data_is_wrong(
    tmp_path: Path, data: str, why: str
) -> None:
    (tmp_path / "broken.json").write_text("nope")
    bench = tmp_path / "other.yaml"
    bench.write_text(f"name: other\ndescription: d\nkernel: sleep\ndata: {data}\n")
    result = CliRunner().invoke(cli.app, ["run", "--bench", str(bench), "--fast"])
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE, f"{bench}:4: data: {why.format(folder=tmp_path)}\n")


def test_a_newer_results_file_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "new.json"
    data.write_text(json.dumps({"schema_version": 99}))
    result = CliRunner().invoke(cli.app, ["render", str(data)])
    assert result.exit_code == EXIT_USAGE
    assert "schema_version: 99 is newer than this kernbench understands" in result.stderr


def test_fast_mode_redraws_its_own_folder_and_refuses_any_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)

    def fast(out: Path) -> tuple[int, str]:
        result = CliRunner().invoke(cli.app, ["run", "--bench", "milestone-1h-ccl", "--fast",
                                              "--out", str(out)])
        return result.exit_code, result.stderr.strip()

    out = tmp_path / "drawn"
    assert fast(out)[0] == EXIT_OK
    assert fast(out)[0] == EXIT_OK  # drawn again over its own figures
    run = tmp_path / "run"
    (run / "figures").mkdir(parents=True)
    (run / "figures" / "busbw.png").write_bytes(b"a measured run's figure")
    (run / "results.json").write_text("{}")
    assert fast(run) == (EXIT_USAGE, f"--out: {run} holds a run; fast mode would draw the "
                                     "committed data over its figures: give a new folder")
    assert (run / "figures" / "busbw.png").read_bytes() == b"a measured run's figure"
    (out / "notes.txt").write_text("mine")
    assert fast(out) == (EXIT_USAGE, f"--out: {out} holds notes.txt, which fast mode did not "
                                     "draw; give a new folder")
    (out / "notes.txt").unlink()
    (out / "figures" / "plot.py").write_text("mine")
    assert fast(out) == (EXIT_USAGE, f"--out: {out} holds figures/plot.py, which fast mode did not "
                                     "draw; give a new folder")


def test_fast_mode_redraws_a_folder_a_kill_left_temporaries_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fast mode killed (kill -9) as it wrote a figure leaves its temporary: the next one
    draws the folder again, where it said `holds figures/.busbw.png.XXXXXXXX`."""
    monkeypatch.chdir(REPO)
    out = tmp_path / "drawn"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / ".busbw.png.ab3_x9yz").write_bytes(b"\x89PNG cut by the kill")
    (out / "figures" / ".latency.json.q1w2e3r4").write_text('{"cut')
    args = ["run", "--bench", "milestone-1h-ccl", "--fast", "--out", str(out)]
    assert CliRunner().invoke(cli.app, args).exit_code == EXIT_OK
    assert (out / "figures" / "busbw.png").read_bytes().startswith(b"\x89PNG")
    (out / "figures" / ".notes.txt.ab3_x9yz").write_text("a temporary, not of a figure")
    assert CliRunner().invoke(cli.app, args).exit_code == EXIT_USAGE


def copied_ccl_bench(folder: Path, pending: bool = False) -> Path:
    """milestone-1h-ccl and its data in `folder`; `pending`: as a run left it before its
    first cell was measured."""
    from kernbench.results import model as results

    (folder / "data").mkdir(parents=True)
    data = results.load(REPO / "benches/data/milestone-1h-ccl.json")
    if pending:
        data.cells = [cell.model_copy(update={"status": "pending", "rounds": [],
                                              "summary": None}) for cell in data.cells]
    results.save(data, folder / "data" / "milestone-1h-ccl.json")
    bench = folder / "ccl.yaml"
    bench.write_text((REPO / "benches/milestone-1h-ccl.yaml").read_text())
    return bench


def test_fast_mode_with_nothing_to_draw_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bench whose data holds no measured cell left runs/NAME/<UTC>/figures/ behind,
    holding empty figures."""
    copied_ccl_bench(tmp_path, pending=True)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, ["run", "--bench", "ccl.yaml", "--fast"])
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE, f"ccl.yaml:46: data: {Path('data', 'milestone-1h-ccl.json')} holds no "
                    "measured cell: nothing to draw\n")
    assert not (tmp_path / "runs").exists()


def test_a_fast_mode_that_fails_to_draw_removes_the_folders_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernbench import render
    from kernbench.errors import UserError

    def broken(results: object, out: Path, *_: object, **__: object) -> list[Path]:
        out.mkdir(parents=True)
        (out / "half.png").write_bytes(b"")
        raise UserError("figure busbw: cannot be drawn from these results")

    copied_ccl_bench(tmp_path)
    (tmp_path / "runs").mkdir()  # there before: kept
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(render, "render_results", broken)
    result = CliRunner().invoke(cli.app, ["run", "--bench", "ccl.yaml", "--fast"])
    assert result.exit_code == EXIT_USAGE
    assert list((tmp_path / "runs").iterdir()) == []


def test_fast_mode_names_the_data_relative_to_the_working_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(cli.app, ["run", "--bench", "milestone-1h-ccl", "--fast",
                                          "--out", str(tmp_path)])
    assert result.exit_code == EXIT_OK, result.output
    assert result.stdout.splitlines()[0] == (
        f"milestone-1h-ccl: fast mode, 2 figures from "
        f"{Path('benches', 'data', 'milestone-1h-ccl.json')}")
