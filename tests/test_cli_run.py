"""The run-side commands through the CLI: run, render, summarize, ab, calibrate."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from kernbench.results.ab import AB_FORMAT, AbReport
from kernbench.results.model import SCHEMA_VERSION

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def tiny_bench(folder: Path, fail: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.py").write_text(textwrap.dedent("""\
        import numpy as np

        def make(n, fail=False, **_):
            if fail and n == 8:
                raise ValueError("no n=8 today")
            a = np.ones((n, n)) * 1.5
            return lambda: a @ a
        """))
    bench = folder / "tiny.yaml"
    bench.write_text(textwrap.dedent(f"""\
        name: tiny
        description: tiny numpy products
        kernel: tiny:make
        axes: {{n: [4, 8]}}
        variants: {{v: {{fail: {str(fail).lower()}}}}}
        metrics: {{flops: 2*n*n*n}}
        timer: {{warmup_s: 0.0, budget_s: 0.02, min_samples: 3}}
        figures: [throughput]
        """))
    return bench


@pytest.mark.slow
def test_run_then_render(tmp_path: Path) -> None:
    bench = tiny_bench(tmp_path / "b")
    out = tmp_path / "out"
    result = runner.invoke(cli.app, ["run", "--bench", str(bench), "--device", "cpu",
                                     "--out", str(out)])
    assert result.exit_code == EXIT_OK, result.output
    assert "tiny: 2 cells (2 ok)" in result.stdout
    assert (out / "figures" / "throughput.png").exists()
    data = json.loads((out / "results.json").read_text())
    assert data["schema_version"] == SCHEMA_VERSION and data["bench"] == "tiny"
    assert {"host", "cpu", "python", "numpy", "blas", "git", "command"} <= set(data["provenance"])
    again = runner.invoke(cli.app, ["render", str(out / "results.json"), "--out",
                                    str(tmp_path / "redrawn")])
    assert again.exit_code == EXIT_OK
    assert (tmp_path / "redrawn" / "throughput.png").exists()


@pytest.mark.slow
def test_run_with_a_failing_cell_exits_1_and_names_it(tmp_path: Path) -> None:
    bench = tiny_bench(tmp_path / "b", fail=True)
    result = runner.invoke(cli.app, ["run", "--bench", str(bench), "--device", "cpu",
                                     "--out", str(tmp_path / "out"), "--no-figures"])
    assert result.exit_code == EXIT_FAILED
    assert "failed: v/n=8: round 1: ValueError: no n=8 today" in result.stderr


def test_run_refuses_a_folder_that_holds_a_run(tmp_path: Path) -> None:
    bench = tiny_bench(tmp_path / "b")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "run.json").write_text("{}")
    result = runner.invoke(cli.app, ["run", "--bench", str(bench), "--device", "cpu",
                                     "--out", str(tmp_path / "out")])
    assert result.exit_code == EXIT_USAGE
    assert "already holds a run; use --resume" in result.stderr


def _rebuilt_on_one_h200(folder: Path) -> AbReport:
    """The ab.json summarize wrote, checked to say its sides measured on one H200 with
    one code; then without that and its `only` (ab-run.json's), as the committed ab.json
    (older than version 6, and than `only` in ab.json) reads."""
    rebuilt = AB_FORMAT.read(folder / "ab.json")
    where = rebuilt.measured_on
    assert where is not None and where.device_name == "NVIDIA H200", where
    assert where.driver and where.commit and where.differing == {}, where
    assert len(where.runs) == len(rebuilt.runs)
    return rebuilt.model_copy(update={"measured_on": None, "only": []})


@pytest.mark.parametrize("name", ["ab-tf32-h200", "ab-tf32-h200-interleaved",
                                  "ab-schedules-h200/tf32-sequential-run1"])
def test_summarize_reproduces_the_committed_h200_ab(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "ab"
    shutil.copytree(REPO / "benches/data" / name, folder)
    committed = AB_FORMAT.read(folder / "ab.json")  # migrated to the current version
    (folder / "ab.json").unlink()
    result = runner.invoke(cli.app, ["summarize", str(folder)])
    assert result.exit_code == EXIT_OK, result.output
    assert _rebuilt_on_one_h200(folder) == committed
    cells = committed.model_dump(mode="json")["cells"]
    verdicts = {c["params"]["dtype"]: set() for c in cells}
    for cell in cells:
        verdicts[cell["params"]["dtype"]].add(cell["verdict"])
    # cuBLAS without tf32 is several times slower; bf16 GEMMs never read the switch, and
    # over six rounds their deltas sit where the A/A control's do (ADR 0020 addendum).
    assert verdicts["tf32"] == {"slower"}
    assert verdicts["bf16"] == {"same"}
    assert all(c["aa_p"] is not None for c in cells)


def test_summarize_reads_the_packed_turns_of_a_committed_interleaved_ab(tmp_path: Path) -> None:
    # Run 7 of the known-effect A/B (docs/ab-schedules.md): each round's turns packed.
    folder = tmp_path / "ab"
    shutil.copytree(REPO / "benches/data/ab-schedules-h200/known-interleaved-5ms-run7", folder)
    assert sorted(p.name for p in folder.glob("r*_turns.*")) == [
        f"r{k}_turns.json.xz" for k in range(1, 7)]
    committed = AB_FORMAT.read(folder / "ab.json")
    (folder / "ab.json").unlink()
    assert runner.invoke(cli.app, ["summarize", str(folder)]).exit_code == EXIT_OK
    assert _rebuilt_on_one_h200(folder) == committed
    assert all(cell.turns for cell in committed.cells)
    assert {c.verdict for c in committed.cells if c.id.startswith("none/")} == {"same"}
    assert {c.verdict for c in committed.cells if not c.id.startswith("none/")} == {"slower"}


@pytest.mark.parametrize(("name", "a"), [
    ("ab-gemm-variants-h200", "cublas"), ("ab-gemm-variants-h200-run1", "cublas"),
    ("ab-gemm-variants-h200-isolated", "resident"),
])
def test_summarize_reproduces_the_committed_ab_of_two_variants(
    tmp_path: Path, name: str, a: str
) -> None:
    # cuBLAS (A) against the Triton GEMM (B), each pair of cells read under its pair's id.
    folder = tmp_path / "ab"
    shutil.copytree(REPO / "benches/data" / name, folder)
    committed = AB_FORMAT.read(folder / "ab.json")
    (folder / "ab.json").unlink()
    assert runner.invoke(cli.app, ["summarize", str(folder)]).exit_code == EXIT_OK
    assert _rebuilt_on_one_h200(folder) == committed
    assert (committed.switch, committed.a, committed.b) == ("variant", a, "triton")
    assert len(committed.cells) == 20
    assert all(c.id.startswith(f"{a}-vs-triton/shape=") for c in committed.cells)
    assert not any(c.verdict == "faster" for c in committed.cells)


@pytest.mark.parametrize(("damage", "reason"), [
    ("{\n", "unreadable results: {}:2: not valid JSON: Expecting property name"),
    (None, "exited with exit code 0 and wrote no results.json"),
])
def test_summarize_says_on_stderr_why_a_side_failed(tmp_path: Path, damage: str | None,
                                                    reason: str) -> None:
    folder = tmp_path / "ab"
    shutil.copytree(REPO / "benches/data/ab-tf32-h200", folder)
    for packed in (folder / "r1_B").glob("results.json*"):
        packed.unlink()
    if damage is not None:
        (folder / "r1_B" / "results.json").write_text(damage)
    result = runner.invoke(cli.app, ["summarize", str(folder)])
    assert result.exit_code == EXIT_FAILED
    line = "failed: cublas in round 1, 1 failure, e.g. r1_B: " + \
        reason.format(folder / "r1_B" / "results.json")
    # as `ab` closes: a row per cell, the verdicts, how far the A/A floors widened `same`
    *table, verdicts, widened, failed = result.stderr.splitlines()
    assert table[0].split() == ["cell", "verdict", "delta", "interval", "coverage",
                                "threshold"] and len(table) == 1 + 8
    assert widened.startswith("note: 1 of 1 cell called same was judged against a threshold"), \
        widened
    assert verdicts == ("verdicts: faster 0, slower 4, same 1, unstable 3 (of 8 cells); false "
                        "faster/slower calls to expect with no effect at all: at most 0.50")
    assert failed.startswith(line), result.stderr


def test_summarize_of_a_plain_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(cli.app, ["summarize", str(tmp_path)])
    assert result.exit_code == EXIT_USAGE
    assert "Traceback" not in result.output


def test_ab_needs_a_switch(tmp_path: Path) -> None:
    bench = tiny_bench(tmp_path / "b")
    result = runner.invoke(cli.app, ["ab", "--bench", str(bench), "--device", "cpu"])
    assert result.exit_code == EXIT_USAGE
    assert "switch" in result.stderr


def test_calibrate_cpu_writes_a_profile_that_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernbench.commands import calibrate
    from kernbench.execute.calibrate_setup import Sizes
    from kernbench.spec.loader import load_hardware

    monkeypatch.setattr(calibrate, "Sizes", lambda: Sizes(
        cpu_gemm=64, cpu_copy_bytes=1 << 20, reps=3))
    out = tmp_path / "cpu.yaml"
    result = runner.invoke(cli.app, ["calibrate", "--device", "cpu", "--out", str(out),
                                     "--name", "test-cpu"])
    assert result.exit_code == EXIT_OK, result.output
    profile = load_hardware(out)
    assert profile.kind == "cpu" and profile.name == "test-cpu"
    assert profile.peak_tflops["fp32"].measured is not None  # type: ignore[index]


@pytest.mark.slow
def test_only_runs_the_selected_cells_and_resume_keeps_the_selection(tmp_path: Path) -> None:
    bench = tiny_bench(tmp_path / "b")
    out = tmp_path / "out"
    result = runner.invoke(cli.app, ["run", "--bench", str(bench), "--device", "cpu",
                                     "--out", str(out), "--only", "n=8", "--no-figures"])
    assert result.exit_code == EXIT_OK, result.output
    data = json.loads((out / "results.json").read_text())
    assert [(c["index"], c["params"]["n"]) for c in data["cells"]] == [(1, 8)]
    assert json.loads((out / "run.json").read_text())["only"] == ["n=8"]


@pytest.mark.slow
def test_shards_merge_into_the_whole_sweep(tmp_path: Path) -> None:
    bench = tiny_bench(tmp_path / "b")
    parts = []
    for i in (1, 2):
        out = tmp_path / f"shard{i}"
        result = runner.invoke(cli.app, ["run", "--bench", str(bench), "--device", "cpu",
                                         "--out", str(out), "--shard", f"{i}/2",
                                         "--no-figures"])
        assert result.exit_code == EXIT_OK, result.output
        parts.append(str(out / "results.json"))
    merged_path = tmp_path / "merged" / "results.json"
    result = runner.invoke(cli.app, ["merge", *parts, "--out", str(merged_path)])
    assert result.exit_code == EXIT_OK, result.output
    merged = json.loads(merged_path.read_text())
    assert [c["params"]["n"] for c in merged["cells"]] == [4, 8]
    assert len(merged["provenance"]["merged_from"]) == 2
    assert (tmp_path / "merged" / "figures" / "throughput.png").exists()
    # The same shard twice is not a sweep.
    again = runner.invoke(cli.app, ["merge", parts[0], parts[0], "--out",
                                    str(tmp_path / "x.json")])
    assert again.exit_code == EXIT_USAGE
    assert "given twice" in again.stderr


def test_the_run_summary_counts_unsteady_cells(tmp_path: Path, capsys) -> None:
    from kernbench.commands.run import report
    from kernbench.results.model import load

    results = load(Path(__file__).resolve().parents[1] / "docs" / "steady" / "floor-sweep.json.xz")
    unsteady = sum(bool(c.unsteady) for c in results.cells)
    assert report(results, tmp_path) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "milestone-1h-gemm: 119 cells (119 ok)",
        f"  {unsteady} unsteady: their rounds differ by more than 3% (timer.steady_tol), "
        "flagged in the report and marked in the figures",
    ]
    steady = results.model_copy(update={"cells": [c.model_copy(update={"unsteady": False})
                                                  for c in results.cells]})
    report(steady, tmp_path)
    assert "unsteady" not in capsys.readouterr().out


def test_an_interrupt_while_the_outputs_are_written_says_how_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli_helpers import invoke, nap_bench

    from kernbench.errors import EXIT_INTERRUPTED
    from kernbench.render import outputs

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    bench, out = nap_bench(tmp_path / "b", "rounds: 1\n"), tmp_path / "out"
    monkeypatch.setattr(outputs, "write_run_outputs", interrupted)
    code, _, err = invoke("run", "--bench", str(bench), "--device", "cpu", "--out", str(out))
    assert (code, err) == (EXIT_INTERRUPTED, "interrupted while writing the run's outputs; "
                           f"finish with: kernbench run --resume {out}\n")
    monkeypatch.undo()
    assert invoke("run", "--resume", str(out))[0] == EXIT_OK
    assert (out / "report.md").is_file()


def test_outputs_that_a_full_disk_refused_are_named_with_how_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from cli_helpers import invoke, nap_bench

    from kernbench.render import outputs
    from kernbench.results.atomic import CannotWrite

    def disk_full(*_: object, **__: object) -> None:
        raise CannotWrite(out / "report.html", OSError(errno.ENOSPC, "No space left on device"))

    bench, out = nap_bench(tmp_path / "b", "rounds: 1\n"), tmp_path / "out"
    monkeypatch.setattr(outputs, "write_run_outputs", disk_full)
    code, _, err = invoke("run", "--bench", str(bench), "--device", "cpu", "--out", str(out))
    assert (code, err) == (EXIT_FAILED, f"{out}: outputs not all written: {out}/report.html: "
                           "cannot write: No space left on device; make room, then "
                           f"kernbench run --resume {out} writes them\n")
    monkeypatch.undo()
    assert invoke("run", "--resume", str(out))[0] == EXIT_OK
    assert (out / "report.md").is_file()


def test_an_interrupt_before_the_first_cell_says_how_to_start_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli_helpers import invoke, nap_bench

    from kernbench.errors import EXIT_INTERRUPTED
    from kernbench.results import provenance

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    bench, out = nap_bench(tmp_path / "b", "rounds: 1\n"), tmp_path / "out"
    monkeypatch.setattr(provenance, "collect", interrupted)
    code, _, err = invoke("run", "--bench", str(bench), "--device", "cpu", "--out", str(out))
    assert (code, err) == (EXIT_INTERRUPTED, "interrupted before the first cell; start it "
                           f"with: kernbench run --resume {out}\n")
    monkeypatch.undo()
    assert invoke("run", "--resume", str(out))[0] == EXIT_OK
