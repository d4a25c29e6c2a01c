"""The commands that read results, handed a file or folder of another kind (an A/B's, a
run's run.json, a bench): one line saying what it is and what to give instead."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_helpers import invoke

from kernbench.errors import EXIT_OK, EXIT_USAGE

AB = Path(__file__).resolve().parent.parent / "benches" / "data" / "ab-nccl-proto-h200x2"
SIDE = AB / "r5_AA1"  # a side's run folder, its results packed
BENCH = AB.parent.parent / "ab-nccl-proto.yaml"


def an_ab(what: str, folder: Path) -> str:
    return (f"{what}; its report is {folder / 'report.md'} "
            f"(`kernbench summarize {folder}` rebuilds it)\n")


@pytest.mark.parametrize("command", ["render", "report", "export", "compare"])
def test_an_abs_report_file_is_named_an_abs(command: str) -> None:
    argv = [command, str(AB / "ab.json")] + ([str(SIDE)] if command == "compare" else [])
    assert invoke(*argv)[0::2] == (
        EXIT_USAGE, an_ab(f"{AB / 'ab.json'}: an A/B's file, not a run's results", AB)
    )


@pytest.mark.parametrize("command", ["render", "report", "export"])
def test_an_abs_folder_is_named_an_abs(command: str) -> None:
    assert invoke(command, str(AB))[0::2] == (
        EXIT_USAGE, an_ab(f"{AB}: an A/B's folder, not a run's", AB)
    )


def test_a_runs_options_are_not_its_results() -> None:
    assert invoke("render", str(SIDE / "run.json"))[0::2] == (
        EXIT_USAGE, f"{SIDE / 'run.json'}: a run's options (run.json), not its results; "
                    f"give the run folder ({SIDE}) or its results.json\n"
    )


def test_a_bench_file_is_not_results() -> None:
    assert invoke("report", str(BENCH))[0::2] == (
        EXIT_USAGE, f"{BENCH}: a bench file, not results; "
                    f"`kernbench run --bench {BENCH}` measures it\n"
    )


def test_a_run_cut_short_before_its_results_is_sent_to_collect(tmp_path: Path) -> None:
    shutil.copy(SIDE / "run.json", tmp_path / "run.json")
    assert invoke("report", str(tmp_path))[0::2] == (
        EXIT_USAGE, f"{tmp_path}: a run without a results.json (cut short?); "
                    f"`kernbench collect {tmp_path}` builds it from the journal\n"
    )


def test_a_run_folder_with_its_results_packed_is_read(tmp_path: Path) -> None:
    code, out, _ = invoke("export", str(SIDE), "--out", str(tmp_path / "rows.csv"))
    assert code == EXIT_OK and out == f"wrote {tmp_path / 'rows.csv'}\n"
