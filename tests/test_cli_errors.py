"""Command-line input errors are one line with exit 2, fast mode reads its variable
strictly, and `--bench NAME` parses only the file it finds (issue 12, items 9 and 12)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import invoke, new_project

from kernbench.commands.run import fast_requested
from kernbench.errors import EXIT_BROKEN_PIPE, EXIT_USAGE, UserError
from kernbench.spec import discovery, loader, yaml_document
from kernbench.worker_env import FAST_ENV


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = new_project(tmp_path, monkeypatch, "requires: {device: cpu}\n")
    monkeypatch.delenv(FAST_ENV, raising=False)
    return root


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--bench", "alpha", "--rounds", "1000000000"],
         "Invalid value for '--rounds': Input should be less than or equal to 100"),
        (["run", "--bench", "alpha", "--rounds", "x"],
         "Invalid value for '--rounds': Input should be a valid integer, unable to parse "
         "string as an integer"),
        (["ab", "--bench", "alpha", "--min-effect", "inf"],
         "Invalid value for '--min-effect': inf is not a finite number"),
        (["ab", "--bench", "alpha", "--turn-ms", "inf"],
         "Invalid value for '--turn-ms': inf is not a finite number"),
        (["summarize", ".", "--min-effect", "inf"],
         "Invalid value for '--min-effect': inf is not a finite number"),
        (["summarize", ".", "--min-effect", "nan"],
         "Invalid value for '--min-effect': nan is not a finite number"),
        (["ab", "--bench", "alpha", "--min-effect", "nan"],
         "Invalid value for '--min-effect': nan is not a finite number"),
        (["compare", "a.json", "b.json", "--min-effect", "nan"],
         "Invalid value for '--min-effect': nan is not a finite number"),
        (["compare", "a.json", "b.json", "--min-effect", "-1"],
         "Invalid value for '--min-effect': -1 is not within 0 to 1000"),
        (["ab", "--bench", "alpha", "--min-effect", "1e4"],
         "Invalid value for '--min-effect': 10000 is not within 0 to 1000"),
        (["plan"], "Missing option '--bench'."),
        (["run", "--qxqxqx"], "No such option: --qxqxqx"),  # unlike any, so no suggestion
        (["--nope"], "No such option: --nope"),
        (["nocommand"], "No such command 'nocommand'."),
    ],
)
def test_option_errors_are_one_line(project: Path, args: list[str], message: str) -> None:
    assert invoke(*args) == (EXIT_USAGE, "", message + "\n")


def test_no_arguments_still_print_the_help(project: Path) -> None:
    code, out, _ = invoke()
    assert code == EXIT_USAGE and "[OPTIONS] COMMAND [ARGS]" in out and "list" in out


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "on", " On "])
def test_fast_mode_on(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(FAST_ENV, value)
    assert fast_requested(False) is True


@pytest.mark.parametrize("value", ["", "0", "false", "False", "no", "off"])
def test_fast_mode_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(FAST_ENV, value)
    assert fast_requested(False) is False
    assert fast_requested(True) is True


def test_fast_mode_value_not_understood(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAST_ENV, "maybe")
    with pytest.raises(UserError) as info:
        fast_requested(False)
    assert str(info.value) == (
        "MILESTONE_FAST: 'maybe' is not 1, true, yes, on (fast mode) or 0, false, no, off"
    )


def test_fast_mode_false_measures_instead(project: Path) -> None:
    # Fast mode would stop at the missing data file; off, the run stops at the device check.
    env = {FAST_ENV: "false"}
    code, _, err = invoke("run", "--bench", "alpha", "--device", "cuda", env=env)
    assert (code, err) == (
        EXIT_USAGE, "benches/alpha.yaml:4: requires.device: the bench needs cpu, not cuda\n"
    )
    code, _, err = invoke("run", "--bench", "alpha", env={FAST_ENV: "1"})
    assert (code, err) == (
        EXIT_USAGE, "benches/alpha.yaml:1: data: fast mode needs the bench's committed data file\n"
    )


def test_validate_dev_zero_is_one_line(project: Path) -> None:
    assert invoke("validate", "/dev/zero") == (
        EXIT_USAGE, "", "/dev/zero: cannot read: not a regular file\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [(["validate", "a\nb.yaml"], "a\\nb.yaml: file not found"),
     (["run", "--bench", "a\nb.yaml"], "a\\nb.yaml: bench file not found"),
     (["render", "a\r\nb.json"], "a\\r\\nb.json: results file not found"),
     (["run", "--resume", "a\nb"], "--resume: a\\nb holds no run (run.json not found)")],
)
def test_a_path_with_a_line_break_stays_one_line(
    project: Path, args: list[str], message: str
) -> None:
    assert invoke(*args)[::2] == (EXIT_USAGE, message + "\n")


def test_validate_of_a_packed_results_file_says_what_it_is(project: Path) -> None:
    packed = Path(__file__).parent / "fixtures" / "milestone-1h-ccl-v1.json.gz"
    assert invoke("validate", str(packed)) == (
        EXIT_USAGE, "", f"{packed}: a packed file (results, as a run packs them), not a bench "
        "or profile file\n"
    )


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the YAML parser reads, in order."""
    seen: list[Path] = []
    original = yaml_document.read_document

    def spy(path: Path) -> yaml_document.Document:
        seen.append(Path(path))
        return original(path)

    monkeypatch.setattr(yaml_document, "read_document", spy)
    monkeypatch.setattr(loader, "read_document", spy)
    monkeypatch.setattr(discovery, "read_document", spy)
    return seen


def test_bench_by_name_parses_only_its_file(project: Path, parsed: list[Path]) -> None:
    benches = project / "benches"
    for index in range(30):
        (benches / f"other{index}.yaml").write_text(
            f"name: other{index}\ndescription: d\nkernel: sleep\n"
        )
    (benches / "broken.yaml").write_text("name: [unclosed\n")
    (benches / "g-file.yml").write_text("# a comment\nname: 'gamma'  # the bench\n"
                                        "description: d\nkernel: sleep\n")
    bench, path = discovery.find_bench("beta")
    assert (bench.name, parsed) == ("beta", [benches / "beta.yaml"])
    parsed.clear()
    bench, path = discovery.find_bench("gamma")
    assert (bench.name, parsed) == ("gamma", [benches / "g-file.yml"])


def test_bench_by_name_in_flow_style_is_still_found(project: Path, parsed: list[Path]) -> None:
    (project / "benches" / "x.yaml").write_text(
        "{name: delta, description: d, kernel: sleep}\n"
    )
    bench, path = discovery.find_bench("delta")
    assert (bench.name, path.name) == ("delta", "x.yaml")
    with pytest.raises(UserError) as info:
        discovery.find_bench("epsilon")
    assert str(info.value) == "unknown bench 'epsilon'; known: alpha, beta, delta"


@pytest.mark.parametrize("command", [["list"], ["--help"], ["run", "--help"]])
def test_a_closed_output_pipe_ends_quietly_with_its_own_code(command: list[str]) -> None:
    """`kernbench list | head -1`: no traceback, and not 1 (cells failed); help too, which
    rich prints and would end with 1."""
    repo = Path(__file__).resolve().parents[1]
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line
    try:
        done = subprocess.run([sys.executable, "-m", "kernbench", *command], stdout=write,
                              stderr=subprocess.PIPE, cwd=repo, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(repo)})
    finally:
        os.close(write)
    assert (done.returncode, done.stderr.decode()) == (EXIT_BROKEN_PIPE, "")


@pytest.mark.parametrize("command", [["plan", "--bench", "alpha"], ["run", "--bench", "alpha"],
                                     ["calibrate"]])
def test_a_refused_device_names_the_variable_or_the_option_that_gave_it(
    project: Path, command: list[str]
) -> None:
    refused = "unknown device 'tpu'; choose cpu, cuda or auto\n"
    assert invoke(*command, env={"KERNBENCH_DEVICE": "tpu"}) == (
        EXIT_USAGE, "", f"KERNBENCH_DEVICE: {refused}")
    assert invoke(*command, "--device", "tpu") == (EXIT_USAGE, "", f"--device: {refused}")


def test_a_ctrl_c_while_the_command_line_loads_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The entry point sets its signals before importing typer, rich and pydantic, and says
    what a Ctrl-C once the command line is loaded says."""
    from kernbench import __main__ as entry

    class Loading:
        def __getattr__(self, name: str) -> object:
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "kernbench.cli", Loading())
    monkeypatch.setattr(entry.signal, "signal", lambda *args: None)  # pytest's TERM stays

    def leave(code: int) -> None:  # instead of os._exit, which would end pytest
        raise SystemExit(code)

    monkeypatch.setattr(entry.os, "_exit", leave)
    with pytest.raises(SystemExit) as ended:
        entry.main()
    assert ended.value.code == 130
    assert capsys.readouterr().err == "kernbench: interrupted\n"


def test_a_bench_needing_more_gpus_names_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernbench.execute import requirements

    path = tmp_path / "b.yaml"
    path.write_text("name: b\ndescription: d\nkernel: sleep\nrequires:\n  min_gpus: 9999\n")
    monkeypatch.setattr(requirements, "_cuda_available", lambda: True)
    with pytest.raises(UserError) as info:
        requirements.check_requirements(loader.load_bench(path), path, "cuda")
    assert str(info.value).startswith(f"{path}:5: requires.min_gpus: needs 9999 GPUs, ")


# A name over the 255 bytes most file systems allow, and a path of short names over the
# system's whole-path limit: Path.exists() and is_dir() raise ENAMETOOLONG for either.
TOO_LONG = {"name": "x" * 300, "path": "/".join(["y" * 200] * 25)}


@pytest.mark.parametrize("form", sorted(TOO_LONG))
@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["render", "{long}"], "{long}"),
        (["render", "{results}", "--out", "{long}"], "{long}"),
        (["run", "--bench", "alpha", "--pins", "{long}"], "{cwd}/{long}"),
        (["ab", "--bench", "alpha", "--switch", "KB_X", "--out", "{long}"], "{long}"),
        (["ab", "--resume", "{long}"], "{long}/ab-run.json"),
        (["summarize", "{long}"], "{long}/ab-run.json"),
        (["compare", "{long}", "{results}"], "{long}"),
        (["compare", "{results}", "{results}", "--out", "{long}"], "{long}"),
        (["collect", "{long}"], "collect: {long}"),
        (["export", "{long}"], "{long}"),
        (["validate", "{long}"], "{long}"),
        (["validate", "--bench-dir", "{long}"], "{long}"),
        (["plan", "--bench", "{long}.yaml"], "{long}.yaml"),
        (["list", "--bench-dir", "{long}"], "{long}"),
    ],
)
def test_a_path_too_long_for_the_file_system_is_one_line(
    project: Path, args: list[str], shown: str, form: str
) -> None:
    from fixtures_results import make_gemm_results

    from kernbench.results.model import save

    save(make_gemm_results(), project / "results.json")
    names = {"long": TOO_LONG[form], "results": str(project / "results.json"),
             "cwd": str(project)}
    code, out, err = invoke(*(arg.format(**names) for arg in args))
    assert (code, err) == (EXIT_USAGE, f"{shown.format(**names)}: File name too long\n"), out
