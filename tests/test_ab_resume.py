"""`kernbench ab --resume DIR` continues an interrupted A/B from what it finished:
sequential sides that left their results, interleaved rounds that left their turns and
every side's results; the others run again from scratch."""

from __future__ import annotations

import gzip
import json
import lzma
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from ab_fixtures.build import results
from ab_fixtures.sides import BENCH, Sides
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.outcomes import turns_path
from kernbench.ab.outputs import verdict_table
from kernbench.ab.run import AbOutcome, gated, resume_ab, run_ab
from kernbench.ab.sides import SideRequest
from kernbench.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UserError
from kernbench.execute.lock import folder_lock
from kernbench.execute.options import RunOptions, save_options
from kernbench.results import model as results_io
from kernbench.results.ab import AB_FORMAT
from kernbench.spec.loader import load_bench
from kernbench.spec.models import spec_hash


def interrupted_sequential(tmp_path: Path, stop: str) -> tuple[Path, list[str]]:
    bench = tmp_path / "fake-ab.yaml"
    bench.write_text(BENCH)
    sides = Sides(stop=stop)
    lines: list[str] = []
    outcome = run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=sides,
                     echo=lines.append)
    assert outcome.exit_code == EXIT_INTERRUPTED
    folder = tmp_path / "ab"
    assert [line for line in lines if "interrupted" in line] == [
        f"interrupted: {outcome.report.rounds} of 3 rounds finished, reported in "
        f"{folder / 'report.md'}; continue with: kernbench ab --resume {folder}"]
    return folder, sides.ran


def test_a_sequential_ab_resumes_from_its_finished_sides(tmp_path: Path) -> None:
    folder, ran = interrupted_sequential(tmp_path, stop="r2_A")
    assert ran == ["r1_A", "r1_B", "r2_B"]  # even rounds run B first
    kept = (folder / "r1_B" / "results.json").read_bytes()
    sides = Sides()
    lines: list[str] = []
    outcome = resume_ab(folder, run_side=sides, echo=lines.append)
    assert sides.ran == ["r2_A", "r3_A", "r3_B"]
    assert "resuming" in lines[0] and "3 of 6 sides kept, 3 to run" in lines[0]
    assert (folder / "r1_B" / "results.json").read_bytes() == kept
    assert outcome.exit_code == EXIT_OK
    report = AB_FORMAT.read(folder / "ab.json")
    assert [c.verdict for c in report.cells] == ["slower"] * 4


@pytest.mark.parametrize(("suffix", "compress"), [(".xz", lzma.compress), (".gz", gzip.compress)])
def test_a_packed_folder_resumes_with_its_packed_sides(
    tmp_path: Path, suffix: str, compress: Callable[[bytes], bytes]
) -> None:
    # A committed A/B keeps each side's results packed (scripts/ab_schedules.py pack: xz;
    # older folders gzip); resuming a copy of it (scripts/gpu_ab.sh nccl-proto-resume)
    # keeps those sides.
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    for plain in folder.glob("*/results.json"):
        plain.with_name("results.json" + suffix).write_bytes(compress(plain.read_bytes()))
        plain.unlink()
    sides = Sides()
    assert resume_ab(folder, run_side=sides, echo=lambda line: None).exit_code == EXIT_OK
    assert sides.ran == ["r2_A", "r3_A", "r3_B"]
    assert (folder / "r1_B" / f"results.json{suffix}").is_file()


def test_the_recording_side_cut_short_runs_again_first(tmp_path: Path) -> None:
    folder, ran = interrupted_sequential(tmp_path, stop="r1_A")
    assert ran == []
    sides = Sides()
    assert resume_ab(folder, run_side=sides, echo=lambda line: None).exit_code == EXIT_OK
    assert sides.ran == ["r1_A", "r1_B", "r2_B", "r2_A", "r3_A", "r3_B"]


def test_an_ab_folder_in_use_is_refused(tmp_path: Path) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    (folder / "ab.json").unlink(missing_ok=True)
    with folder_lock(folder, print):
        with pytest.raises(UserError, match=r"in use by another kernbench \(pid \d+\)"):
            resume_ab(folder, run_side=Sides(), echo=lambda line: None)
        result = CliRunner().invoke(cli.app, ["summarize", str(folder)])
        assert result.exit_code == EXIT_USAGE and "in use by another kernbench" in result.stderr
        assert not (folder / "ab.json").exists()


def test_resume_refuses_new_settings_and_a_changed_bench(tmp_path: Path) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    result = CliRunner().invoke(cli.app, ["ab", "--resume", str(folder), "--switch", "KB_Y",
                                          "--rounds", "4"])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == ("--resume: the A/B goes on with its own settings (ab-run.json); "
                             "drop --switch, --rounds\n")
    result = CliRunner().invoke(cli.app, ["ab"])
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE, "--bench: give a bench name (see `kernbench list`) or --resume DIR\n"
    )
    result = CliRunner().invoke(cli.app, ["ab", "--resume", str(tmp_path)])
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE, f"{tmp_path}: not an A/B folder (no ab-run.json)\n"
    )
    # A side that ran wrote its run.json with the bench's hash: a changed bench is refused.
    bench = tmp_path / "fake-ab.yaml"
    save_options(folder / "r1_A", RunOptions(
        bench_path=bench, spec_hash=spec_hash(load_bench(bench)), device="cpu", rounds=1,
        project_pins=tmp_path / "p.json",
    ))
    bench.write_text(BENCH.replace("work_us: 100", "work_us: 120"))
    with pytest.raises(UserError, match=r"^--resume: .* changed since the A/B started "
                                        r"\(\(not recorded\)\); start a new A/B$"):
        resume_ab(folder, run_side=Sides(), echo=lambda line: None)


def side_recorded_with_the_bench(tmp_path: Path, folder: Path) -> Path:
    bench = tmp_path / "fake-ab.yaml"
    measured = load_bench(bench)
    save_options(folder / "r1_A", RunOptions(
        bench_path=bench, spec_hash=spec_hash(measured), spec=measured.model_dump(mode="json"),
        device="cpu", rounds=1, project_pins=tmp_path / "p.json",
    ))
    return bench


def test_resume_names_the_fields_of_a_changed_bench(tmp_path: Path) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    bench = side_recorded_with_the_bench(tmp_path, folder)
    bench.write_text(BENCH.replace("work_us: 100", "work_us: 120"))
    with pytest.raises(UserError, match=r"changed since the A/B started \(variants\); start"):
        resume_ab(folder, run_side=Sides(), echo=lambda line: None)


def test_resume_takes_a_bench_changed_only_in_its_metrics_with_a_note(tmp_path: Path) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    bench = side_recorded_with_the_bench(tmp_path, folder)
    bench.write_text(BENCH + "metrics: {flops: 2*size}\n")
    sides = Sides()
    lines: list[str] = []
    assert resume_ab(folder, run_side=sides, echo=lines.append).exit_code == EXIT_OK
    assert sides.ran == ["r2_A", "r3_A", "r3_B"]
    assert lines[0] == (
        f"note: {bench} changed since the A/B started, only in what is computed from the "
        "measurements; the verdicts are on time alone, the sides still to run compute the "
        "rest with the bench as it is now")


def test_resume_takes_a_side_recorded_before_a_field_kernbench_added_since(
    tmp_path: Path,
) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    bench = tmp_path / "fake-ab.yaml"
    recorded = load_bench(bench).model_dump(mode="json")
    del recorded["timer"]["settle_tol"]  # as an earlier kernbench recorded the bench
    save_options(folder / "r1_A", RunOptions(
        bench_path=bench, spec_hash="an-older-hash", spec=recorded, device="cpu", rounds=1,
        project_pins=tmp_path / "p.json",
    ))
    sides = Sides()
    assert resume_ab(folder, run_side=sides, echo=lambda line: None).exit_code == EXIT_OK
    assert sides.ran == ["r2_A", "r3_A", "r3_B"]


KERNEL = '''\
import os
from kernbench.kernels.synthetic import spin


def make(work_us=200.0, **_):
    seconds = work_us * 1e-6 * (1.10 if os.environ.get("KB_T") == "1" else 1.0)
    return lambda: spin(seconds)
'''


@pytest.mark.slow
def test_an_interleaved_ab_keeps_its_whole_rounds_and_reruns_the_others(
    tmp_path: Path,
) -> None:
    (tmp_path / "turns_kernel.py").write_text(KERNEL)
    bench = tmp_path / "turns.yaml"
    bench.write_text(
        "name: turns\ndescription: interleaved resume\nkernel: turns_kernel:make\n"
        "axes:\n  work_us: [200]\n"
        "timer: {warmup_s: 0.01, budget_s: 0.03, min_samples: 3}\n"
        "ab: {switch: KB_T, rounds: 2}\n"
    )
    folder = tmp_path / "ab"
    assert run_ab(str(bench), out=folder, device="cpu", echo=lambda line: None).exit_code == 0
    # As a kill in round 2 leaves it: one side's results and the turns file missing.
    kept = {p: p.read_bytes() for p in (folder / "r1_A").rglob("*.json") if p.is_file()}
    turns_path(folder, 2).unlink()
    (folder / "r2_B" / "results.json").unlink()
    (folder / "ab.json").unlink()
    lines: list[str] = []
    outcome = resume_ab(folder, echo=lines.append)
    assert outcome.exit_code == EXIT_OK
    assert "2 of 4 sides kept, 2 to run" in lines[0]
    assert all(path.read_bytes() == data for path, data in kept.items())
    assert turns_path(folder, 2).is_file() and (folder / "r2_B" / "results.json").is_file()
    report = AB_FORMAT.read(folder / "ab.json")
    (cell,) = report.cells
    assert cell.turns is not None and len(cell.turns) == 2
    shutil.rmtree(folder / "r2_A")  # a lost side folder: round 2 runs again whole
    assert resume_ab(folder, echo=lambda line: None).exit_code == EXIT_OK
    assert (folder / "r2_A" / "results.json").is_file()


def test_an_interrupted_ab_is_judged_on_the_rounds_every_side_finished(
    tmp_path: Path,
) -> None:
    from kernbench.ab.outputs import summarize_ab

    folder, ran = interrupted_sequential(tmp_path, stop="r3_A")
    assert ran == ["r1_A", "r1_B", "r2_B", "r2_A"]
    written = AB_FORMAT.read(folder / "ab.json")  # by the interrupted A/B itself
    assert (written.rounds, written.planned_rounds) == (2, 3)
    stopped = AbOutcome(folder, written, EXIT_INTERRUPTED)
    assert gated(stopped, "slower").exit_code == EXIT_INTERRUPTED  # not a failed gate
    report = summarize_ab(folder)
    assert (report.rounds, report.planned_rounds) == (2, 3)
    assert not report.failed_runs
    assert [c.verdict for c in report.cells] == ["slower"] * 4
    assert "2 rounds (interrupted: 3 asked for" in (folder / "report.md").read_text()


def test_an_ab_interrupted_before_two_rounds_is_an_interruption_not_a_failure(
    tmp_path: Path,
) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    result = CliRunner().invoke(cli.app, ["summarize", str(folder)])
    assert result.exit_code == EXIT_OK, result.output
    report = AB_FORMAT.read(folder / "ab.json")
    # A row per cell, the lines `ab` closes with (the verdicts, the switch check, the
    # coverage), then how to go on.
    assert result.stderr == "\n".join(verdict_table(report)) + "\n" + (
        "verdicts: faster 0, slower 0, same 0, unstable 4 (of 4 cells); false faster/slower "
        "calls to expect with no effect at all: at most 0.00\n"
        f"{report.switch_note}\n"
        "note: with 1 round every cell is unstable: a verdict needs 2\n"
        f"interrupted: 1 of 3 rounds finished; continue with: kernbench ab --resume {folder}\n")
    assert (report.rounds, report.planned_rounds) == (1, 3)
    assert (report.failed_variants, report.failed_runs) == ({}, [])
    assert [len(c.round_deltas_pct) for c in report.cells] == [1] * 4  # round 1's, kept
    assert {c.verdict for c in report.cells} == {"unstable"}
    assert report.summary.expected_false_calls == 0.0
    text = (folder / "report.md").read_text()
    assert "; 1 round (interrupted: 3 asked for" in text
    assert "Failed" not in text and "r3_A" not in text


def test_a_finished_ab_is_judged_on_all_its_rounds(tmp_path: Path) -> None:
    from kernbench.ab.outputs import summarize_ab

    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    resume_ab(folder, run_side=Sides(), echo=lambda line: None)
    report = summarize_ab(folder)
    assert (report.rounds, report.planned_rounds) == (3, None)


def test_an_ab_of_chosen_cells_passes_the_choice_to_every_side_and_keeps_it(
    tmp_path: Path,
) -> None:
    bench = tmp_path / "fake-ab.yaml"
    bench.write_text(BENCH)
    commands: dict[str, list[str]] = {}

    class Recording(Sides):
        def __call__(self, request: SideRequest) -> int:
            commands[request.run.name] = request.command
            return super().__call__(request)

    run_ab(str(bench), out=tmp_path / "ab", device="cpu", only=["variant=slow"],
           run_side=Recording(stop="r2_A"), echo=lambda line: None)
    manifest = json.loads((tmp_path / "ab" / "ab-run.json").read_text())
    assert (manifest["only"], manifest["variants"]) == (["variant=slow"], ["slow"])
    resume_ab(tmp_path / "ab", run_side=Recording(), echo=lambda line: None)
    assert set(commands) == {f"r{k}_{side}" for k in (1, 2, 3) for side in "AB"}
    for command in commands.values():
        assert command[command.index("--only") + 1] == "variant=slow"
    result = CliRunner().invoke(cli.app, ["ab", "--resume", str(tmp_path / "ab"),
                                          "--only", "variant=fast"])
    assert result.exit_code == EXIT_USAGE and "drop --only" in result.output


def test_a_side_stopped_with_the_ab_is_not_a_finished_one(tmp_path: Path) -> None:
    from kernbench.ab.outcomes import finished_rounds
    from kernbench.ab.schedule import load_manifest

    folder, _ = interrupted_sequential(tmp_path, stop="r3_A")
    manifest = load_manifest(folder)
    partial = results("r3_A", 3, lambda run, variant, size: size * 1e-6)
    results_io.save(partial.model_copy(update={"complete": False}),
                    folder / "r3_A" / "results.json")  # what a TERM'd side writes
    assert finished_rounds(folder, manifest) == 2
    results_io.save(partial.model_copy(update={"complete": True}),
                    folder / "r3_A" / "results.json")
    assert finished_rounds(folder, manifest) == 2  # r3_B never ran


def test_resume_refuses_to_clear_a_side_that_is_still_running(tmp_path: Path) -> None:
    # A side left running by an A/B killed with -9 holds its folder's lock: clearing the
    # folder under it would mix its late entries into the side run again.
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    with folder_lock(folder / "r2_A", lambda _: None), \
            pytest.raises(UserError, match=r"r2_A: in use by another kernbench"):
        resume_ab(folder, run_side=Sides(), echo=lambda _: None)
    assert (folder / "r2_A" / "run.json").exists()


def _gone(pid: int) -> bool:
    """Dead, or a zombie waiting for whoever adopted it to reap it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux only")
def test_a_sequential_side_dies_with_the_ab_that_started_it(tmp_path: Path) -> None:
    """A kill -9 of `kernbench ab` must not leave its side measuring."""
    side_pid = tmp_path / "side.pid"
    side = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    parent = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kernbench.ab.sides import SideRequest, run_subprocess\n"
        "folder = Path(sys.argv[1])\n"
        "command = [sys.executable, '-c', sys.argv[2], str(folder / 'side.pid')]\n"
        "run_subprocess(SideRequest(None, folder, command, {}, folder / 'log.txt'))\n"
    )
    ab = subprocess.Popen([sys.executable, "-c", parent, str(tmp_path), side])
    try:
        deadline = time.monotonic() + 30
        while not (side_pid.exists() and side_pid.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(side_pid.read_text())
        ab.kill()
        ab.wait()
        deadline = time.monotonic() + 10
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(pid)
    finally:
        ab.kill()


def test_a_resume_whose_bench_is_gone_says_which_file_the_ab_needs(tmp_path: Path) -> None:
    folder, _ = interrupted_sequential(tmp_path, stop="r2_A")
    (tmp_path / "fake-ab.yaml").unlink()
    with pytest.raises(UserError, match=rf"^--resume: the A/B's bench {tmp_path}/fake-ab.yaml "
                                        r"\(ab-run.json bench_path\) is not there"):
        resume_ab(folder, run_side=Sides(), echo=lambda line: None)


@pytest.mark.parametrize("option, value", [("--device", "cpu"), ("--bench-dir", "."),
                                           ("--only", "n=1")])
def test_resume_refuses_what_the_kept_sides_fixed(tmp_path: Path, option: str, value: str
                                                  ) -> None:
    result = CliRunner().invoke(cli.app, ["ab", "--resume", str(tmp_path), option, value])
    assert (result.exit_code, result.stderr) == (EXIT_USAGE, (
        f"--resume: the A/B goes on with its own settings (ab-run.json); drop {option}\n"))


def test_resume_takes_the_device_variable_as_no_choice(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli.app, ["ab", "--resume", str(tmp_path)],
                                env={"KERNBENCH_DEVICE": "cpu"})
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE, f"{tmp_path}: not an A/B folder (no ab-run.json)\n")
