"""The spec commands through typer's runner: list, validate, plan; exit codes.

`kernbench schema`: tests/test_schema.py."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from cli_helpers import invoke, new_project
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from kernbench.spec import discovery
from kernbench.spec.discovery import yaml_files_in
from kernbench.spec.hardware import packaged_hardware_dir

REPO = Path(__file__).resolve().parent.parent
CUSTOM = Path(__file__).resolve().parent / "fixtures" / "custom"
runner = CliRunner()
# validate checks the profiles shipped in the package too, after the project's benches.
SHIPPED = "".join(f"ok {path}\n" for path in yaml_files_in(packaged_hardware_dir()))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = new_project(tmp_path, monkeypatch)
    monkeypatch.delenv("KERNBENCH_DEVICE", raising=False)
    return root


def test_list(project: Path) -> None:
    code, out, err = invoke("list")
    assert (code, err) == (EXIT_OK, "")
    assert out == "alpha  the alpha bench\nbeta   the beta bench\n"


def test_list_shows_broken_benches_without_failing(project: Path) -> None:
    (project / "benches" / "gamma.yaml").write_text("name: gamma\ndescription: g\nkernel: gemmm\n")
    code, out, _ = invoke("list")
    assert code == EXIT_OK
    assert out.splitlines()[-1] == (
        "gamma  (invalid: benches/gamma.yaml:3: kernel: unknown kernel 'gemmm'; "
        "built-in: collective, gemm, sleep (or give module:factory))"
    )


def test_list_with_bench_dir_and_custom_kernel(project: Path, tmp_path: Path) -> None:
    shutil.copytree(CUSTOM, tmp_path / "mine")
    code, out, _ = invoke("list", "--bench-dir", str(tmp_path / "mine"))
    assert code == EXIT_OK
    assert "custom-sum  A custom kernel dropped beside its bench file" in out.splitlines()


def test_list_shows_a_bench_whose_kernel_does_not_import_which_validate_refuses(
    project: Path,
) -> None:
    # `list` imports no bench code (ADR 0004's addendum): the module's fault is validate's.
    (project / "benches" / "broken.py").write_text("raise ImportError('half written')\n")
    (project / "benches" / "gamma.yaml").write_text(
        "name: gamma\ndescription: the gamma bench\nkernel: broken:make\n")
    code, out, _ = invoke("list")
    assert (code, out.splitlines()[-1]) == (EXIT_OK, "gamma  the gamma bench")
    code, _, err = invoke("validate", "benches/gamma.yaml")
    assert (code, err.startswith("benches/gamma.yaml:3: kernel: ")) == (EXIT_USAGE, True), err


def test_validate_all(project: Path) -> None:
    code, out, err = invoke("validate")
    assert (code, err) == (EXIT_OK, "")
    assert out == "ok benches/alpha.yaml\nok benches/beta.yaml\n" + SHIPPED


def test_validate_reports_every_error_and_exits_2(project: Path) -> None:
    (project / "benches" / "bad.yaml").write_text(
        "name: bad\ndescription: b\nkernel: gemm\nrounds: x\n"
    )
    (project / "benches" / "twin.yaml").write_text("name: alpha\ndescription: b\nkernel: sleep\n")
    code, out, err = invoke("validate")
    assert code == EXIT_USAGE
    assert out == "ok benches/alpha.yaml\nok benches/beta.yaml\nok benches/twin.yaml\n" + SHIPPED
    assert err == (
        "benches/bad.yaml:4: rounds: Input should be a valid integer (got 'x')\n"
        "benches/twin.yaml:1: name: bench 'alpha' is also defined in benches/alpha.yaml\n"
    )


def test_validate_given_paths(project: Path) -> None:
    h200 = REPO / "kernbench" / "data" / "hardware" / "h200.yaml"
    code, out, _ = invoke("validate", "benches/beta.yaml", str(h200))
    assert code == EXIT_OK
    assert out.splitlines()[0] == "ok benches/beta.yaml"
    code, _, err = invoke("validate", "benches/none.yaml")
    assert (code, err) == (EXIT_USAGE, "benches/none.yaml: file not found\n")


def test_validate_a_folder_checks_its_bench_files(project: Path) -> None:
    (project / "mine").mkdir()
    (project / "mine" / "bad.yaml").write_text("name: bad\ndescription: b\nkernel: gemmm\n")
    (project / "mine" / "notes.txt").write_text("not a bench")
    code, out, err = invoke("validate", "benches", "mine")
    assert (code, out) == (EXIT_USAGE, "ok benches/alpha.yaml\nok benches/beta.yaml\n")
    assert err.startswith("mine/bad.yaml:3: kernel: unknown kernel 'gemmm'")
    # A folder without bench files says so, not that a folder cannot be read.
    (project / "empty").mkdir()
    (project / "empty" / "notes.txt").write_text("not a bench")
    assert invoke("validate", "empty") == (
        EXIT_USAGE, "", "empty: the folder holds no bench files (*.yaml or *.yml)\n")


def test_validate_notes_a_bench_that_cannot_run_here_as_list_and_plan_do(project: Path) -> None:
    """The file checks (exit 0), but `run` would refuse it: validate said only ok."""
    (project / "benches" / "alpha.yaml").write_text(
        "name: alpha\ndescription: d\nkernel: sleep\n"
        "requires: {imports: [kernbench_absent_module]}\n")
    why = "not usable here: needs kernbench_absent_module, not installed here"
    assert invoke("validate", "alpha") == (
        EXIT_OK, f"ok benches/alpha.yaml\nnote: benches/alpha.yaml: {why}\n", "")
    assert f"alpha  d ({why})" in invoke("list")[1]
    assert f"note: {why}\n" in invoke("plan", "--bench", "alpha", "--device", "cpu")[1]


def test_validate_the_committed_benches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.delenv(discovery.BENCH_PATH_ENV, raising=False)
    code, out, err = invoke("validate")
    assert (code, err) == (EXIT_OK, "")
    assert "ok benches/milestone-1h-gemm.yaml" in out.splitlines()
    assert "ok kernbench/data/hardware/h200.yaml" in out.splitlines()


def test_plan_prints_cells_and_an_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = invoke("plan", "--bench", "milestone-1h-gemm", "--device", "cpu")
    assert code == EXIT_OK
    lines = out.splitlines()
    assert lines[0] == "bench milestone-1h-gemm (benches/milestone-1h-gemm.yaml) on cpu: 24 cells"
    assert lines[-1].startswith("estimate (rough): about ")
    assert "cpu_blocked" in out and "1024x1024x1024" in out and "16384" not in out
    # what each planned variant passes to the kernel, and how many cells it has
    rows = [" ".join(line.strip("│ ").split()) for line in lines]
    assert "cpu_blocked │ 6 │ backend=numpy autotune=true" in rows
    assert "cpu_staged │ 6 │ backend=numpy staging=staged" in rows
    assert not any(row.startswith("triton │") for row in rows)  # none planned on the CPU


def test_plan_device_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = runner.invoke(
        cli.app, ["plan", "--bench", "milestone-1h-ccl"], env={"KERNBENCH_DEVICE": "cuda"}
    )
    assert result.exit_code == EXIT_OK
    assert result.stdout.splitlines()[0].endswith("on cuda: 210 cells")


@pytest.mark.parametrize("command", [["plan"], ["plan", "--json"], ["run"]])
def test_a_plan_empty_on_the_device_is_refused_as_run_refuses_it(
    project: Path, command: list[str]
) -> None:
    bench = project / "benches" / "alpha.yaml"
    bench.write_text(bench.read_text() + "exclude: [{device: cpu}]\n")
    line = len(bench.read_text().splitlines())
    code, out, err = invoke(*command, "--bench", "alpha", "--device", "cpu")
    assert (code, out, err) == (
        EXIT_USAGE, "", f"benches/alpha.yaml:{line}: exclude: the plan for device cpu is "
        "empty: the exclusions drop every cell on cpu\n"
    )


def test_plan_unknown_bench_and_device(project: Path) -> None:
    code, out, err = invoke("plan", "--bench", "alpah", "--device", "cpu")
    assert (code, out, err) == (
        EXIT_USAGE, "", "unknown bench 'alpah'; did you mean 'alpha'? known: alpha, beta\n")
    code, _, err = invoke("plan", "--bench", "alpha", "--device", "tpu")
    assert (code, err) == (EXIT_USAGE, "--device: unknown device 'tpu'; choose cpu, cuda or auto\n")


def test_an_unknown_bench_gets_the_closest_name_from_every_command(project: Path) -> None:
    """One line: the name meant (difflib) and the known ones; validate says too that the
    name is no file, for it takes paths as well."""
    meant = "did you mean 'alpha'? known: alpha, beta\n"
    for command in (["run", "--bench", "alpah"], ["plan", "--bench", "alpah"]):
        assert invoke(*command) == (EXIT_USAGE, "", f"unknown bench 'alpah'; {meant}"), command
    assert invoke("validate", "alpah") == (
        EXIT_USAGE, "", f"unknown bench 'alpah' (nor a file or folder here); {meant}")
    code, _, err = invoke("run", "--bench", "zzz")
    assert (code, err) == (EXIT_USAGE, "unknown bench 'zzz'; known: alpha, beta\n")


def test_usage_error_exits_2(project: Path) -> None:
    code, _, err = invoke("plan")
    assert code == EXIT_USAGE
    assert "Missing option '--bench'" in err


def test_interrupt_exits_130(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "list_benches", interrupted)
    code, _, err = invoke("list")
    assert (code, err) == (EXIT_INTERRUPTED, "kernbench: interrupted\n")


def test_main_prints_one_line_and_exits_with_the_code(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["kernbench", "plan", "--bench", "nope", "--device", "cpu"])
    with pytest.raises(SystemExit) as info:
        cli.main()
    assert info.value.code == EXIT_USAGE
    assert capsys.readouterr().err == "unknown bench 'nope'; known: alpha, beta\n"
