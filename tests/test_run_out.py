"""`run --out`: a folder kernbench can write, never one holding results that are not its
own; a run refused before measuring leaves nothing behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from cli_helpers import nap_bench
from typer.testing import CliRunner

from kernbench import cli
from kernbench.commands.run_checks import check_out
from kernbench.errors import EXIT_OK, EXIT_USAGE, UserError

runner = CliRunner()


def sleep_bench(folder: Path, extra: str = "") -> Path:
    return nap_bench(folder, extra)


def run_cli(*argv: str) -> tuple[int, str]:
    result = runner.invoke(cli.app, ["run", "--device", "cpu", *argv])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr.strip()


def test_out_an_existing_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file\n")
    code, error = run_cli("--bench", str(sleep_bench(tmp_path)), "--out", str(tmp_path / "taken"))
    assert (code, error) == (EXIT_USAGE, f"--out: {tmp_path / 'taken'} is a file; give a folder")


def test_out_below_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file\n")
    out = tmp_path / "taken" / "run"
    code, error = run_cli("--bench", str(sleep_bench(tmp_path)), "--out", str(out))
    assert (code, error) == (EXIT_USAGE, f"--out: {tmp_path / 'taken'} is a file; give a folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_out_in_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        code, error = run_cli("--bench", str(sleep_bench(tmp_path)), "--out", str(locked / "r"))
    finally:
        locked.chmod(0o755)
    assert (code, error) == (EXIT_USAGE, f"--out: {locked}: cannot write there (permission denied)")


def test_out_that_cannot_be_created_says_so_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--out /proc/foo` (as root: /proc takes no folder) said `cannot lock the folder`."""
    out = tmp_path / "r"
    real_mkdir = Path.mkdir

    def no_folders_here(self: Path, *args: object, **kwargs: object) -> None:
        if self == out:
            raise OSError(errno.ENOENT, "No such file or directory")
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", no_folders_here)
    code, error = run_cli("--bench", str(sleep_bench(tmp_path)), "--out", str(out))
    assert (code, error) == (
        EXIT_USAGE, f"--out: {out}: cannot create the folder: No such file or directory")


def test_out_of_a_name_too_long_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / ("x" * 300)
    code, error = run_cli("--bench", str(sleep_bench(tmp_path)), "--out", str(out))
    assert (code, error) == (EXIT_USAGE, f"--out: {out}: File name too long")
    resumed = runner.invoke(cli.app, ["run", "--resume", str(out)])
    assert (resumed.exit_code, resumed.stderr) == (
        EXIT_USAGE, f"--resume: {out}: File name too long\n")
    collected = runner.invoke(cli.app, ["collect", str(out)])
    assert (collected.exit_code, collected.stderr) == (
        EXIT_USAGE, f"collect: {out}: File name too long\n")


def test_out_holding_results_of_no_run_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "merged"
    out.mkdir()
    (out / "results.json").write_text('{"merged": true}\n')
    code, error = run_cli("--bench", str(sleep_bench(tmp_path)), "--out", str(out))
    assert (code, error) == (
        EXIT_USAGE,
        f"--out: {out} holds a results.json that no run there wrote (no run.json); "
        "give a new folder",
    )
    assert (out / "results.json").read_text() == '{"merged": true}\n'


def test_out_holding_files_of_someone_elses_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "report.md").write_text("mine\n")
    code, error = run_cli("--bench", str(sleep_bench(tmp_path)), "--out", str(out))
    assert (code, error) == (EXIT_USAGE, f"--out: {out} is not empty; give a new folder")
    assert sorted(os.listdir(out)) == ["report.md"]
    assert (out / "report.md").read_text() == "mine\n"


def test_out_holding_only_a_lock_is_a_new_folder(tmp_path: Path) -> None:
    (tmp_path / "run.lock").write_text("")
    check_out(tmp_path)  # checked again under the lock; a refused run leaves it


def test_out_left_by_a_run_killed_as_it_saved_its_options_is_a_new_folder(
    tmp_path: Path,
) -> None:
    # A kill -9 between run.json's temporary and its rename leaves both files; run.json
    # is missing, so the folder is no run to resume, and must take a new one.
    (tmp_path / "run.lock").write_text("")
    (tmp_path / ".run.json.k3x_9qz1").write_text('{"schema_ver')
    check_out(tmp_path)
    (tmp_path / ".results.json.k3x_9qz1").write_text("")  # no run writes this before run.json
    with pytest.raises(UserError, match="is not empty"):
        check_out(tmp_path)


def test_only_the_log_the_ab_runner_names_is_no_stranger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r1_B"
    out.mkdir()
    (out / "log.txt").write_text("")  # the sequential A/B runner opens it first
    monkeypatch.delenv("KERNBENCH_SIDE_LOG", raising=False)
    monkeypatch.setenv("KERNBENCH_SIDE", "B")  # a side alone does not excuse a stranger
    with pytest.raises(UserError, match="is not empty"):
        check_out(out)
    monkeypatch.setenv("KERNBENCH_SIDE_LOG", str(tmp_path / "elsewhere" / "log.txt"))
    with pytest.raises(UserError, match="is not empty"):
        check_out(out)
    monkeypatch.setenv("KERNBENCH_SIDE_LOG", str(out / "log.txt"))
    check_out(out)


@pytest.mark.parametrize(
    ("argv", "extra", "message"),
    [
        (["--only", "nope=1"], "", "--only: unknown key 'nope'"),
        (["--shard", "3/2"], "", "--shard: '3/2': I must be between 1 and N"),
        ([], "exclude: [{device: cpu}]\n", "the plan for device cpu is empty"),
        ([], "exclude: [{work_us: [1, 2]}]\n", ":6: exclude: the exclusions drop every cell"),
        (["--shard", "5/10"], "", "--shard 5/10: shard 5 of 10 is empty: the plan has 2 cells"),
    ],
)
def test_a_refused_plan_leaves_no_folder(
    tmp_path: Path, argv: list[str], extra: str, message: str
) -> None:
    out = tmp_path / "out"
    code, error = run_cli("--bench", str(sleep_bench(tmp_path, extra)), "--out", str(out), *argv)
    assert code == EXIT_USAGE and message in error and "\n" not in error
    assert not out.exists()


@pytest.mark.slow
def test_the_folder_of_a_refused_plan_is_reusable(tmp_path: Path) -> None:
    bench = str(sleep_bench(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    assert run_cli("--bench", bench, "--out", str(out), "--only", "work_us=9")[0] == EXIT_USAGE
    assert sorted(os.listdir(out)) == []
    assert run_cli("--bench", bench, "--out", str(out), "--no-figures")[0] == EXIT_OK


@pytest.mark.slow
def test_a_disk_that_fills_mid_run_is_one_line_and_keeps_what_was_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r"
    real_replace = os.replace

    def full_from_round_2(src: str, dst: str) -> None:  # the runner's writes; not a worker's
        if Path(dst) == out / "tasks" / "r2.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", full_from_round_2)
    code, error = run_cli("--bench", str(sleep_bench(tmp_path, "rounds: 2\n")), "--out", str(out),
                          "--no-figures")
    assert (code, error) == (
        EXIT_USAGE,
        f"{out / 'tasks' / 'r2.json'}: cannot write: No space left on device; the cells "
        f"measured are kept in {out / 'journal'}: make room, then kernbench run --resume {out}",
    )
    assert sorted(p.name for p in (out / "journal" / "r1").glob("0*.json")) == [
        "00000.json", "00001.json"]
    assert not list((out / "tasks").glob(".r2.json.*"))  # no temp file left behind


def test_out_holding_a_finished_run_says_so_not_resume(tmp_path: Path) -> None:
    bench, out = sleep_bench(tmp_path / "b"), tmp_path / "out"
    assert run_cli("--bench", str(bench), "--out", str(out), "--no-figures")[0] == EXIT_OK
    code, error = run_cli("--bench", str(bench), "--out", str(out))
    assert (code, error) == (EXIT_USAGE, f"--out: {out} holds a finished run; choose another --out")
    # A run not finished (its results.json gone, or never written) is still resumed.
    (out / "results.json").unlink()
    code, error = run_cli("--bench", str(bench), "--out", str(out))
    assert (code, error) == (
        EXIT_USAGE, f"--out: {out} already holds a run; use --resume {out} to finish it")


def test_resuming_a_finished_run_says_it_is_complete_in_one_line(tmp_path: Path) -> None:
    """It rebuilt the outputs and printed the run's report again, as if it had measured."""
    bench, out = sleep_bench(tmp_path / "b"), tmp_path / "out"
    assert run_cli("--bench", str(bench), "--out", str(out), "--no-figures")[0] == EXIT_OK
    written = (out / "results.json").stat().st_mtime_ns
    resumed = runner.invoke(cli.app, ["run", "--resume", str(out)])
    assert (resumed.exit_code, resumed.stdout) == (EXIT_OK, (
        f"{out}: the run is already complete, nothing to measure; results: "
        f"{out / 'results.json'}, report: {out / 'report.html'} (kernbench collect {out} "
        "rebuilds them)\n"))
    assert (out / "results.json").stat().st_mtime_ns == written


@pytest.mark.parametrize("report", ["report.md", "report.html"])
def test_resuming_a_finished_run_missing_a_report_writes_it_again(
    tmp_path: Path, report: str
) -> None:
    """The line says the report is there: with either report gone, the resume rebuilds."""
    bench, out = sleep_bench(tmp_path / "b"), tmp_path / "out"
    assert run_cli("--bench", str(bench), "--out", str(out), "--no-figures")[0] == EXIT_OK
    (out / report).unlink()
    resumed = runner.invoke(cli.app, ["run", "--resume", str(out)])
    assert resumed.exit_code == EXIT_OK
    assert "already complete" not in resumed.stdout
    assert (out / report).is_file()
