from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from ab_fixtures.build import results
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.outputs import summarize_ab
from kernbench.ab.run import AbOutcome, ab, resume_ab, run_ab
from kernbench.ab.schedule import load_manifest, side_options
from kernbench.ab.settings import parse_rounds
from kernbench.ab.sides import SideRequest
from kernbench.commands import run as run_command
from kernbench.errors import EXIT_OK, SpecError, UserError
from kernbench.execute.cell_timers import read_timers
from kernbench.execute.run_folder import RunFolder
from kernbench.results import model as results_io
from kernbench.results.ab import AB_FORMAT
from kernbench.spec.loader import load_bench
from kernbench.spec.models import spec_hash

BENCH = """\
name: fake-ab
description: a bench the fake side runner answers for
kernel: {kernel}
axes:
  size: [100, 400]
variants:
  fast: {{work_us: 50}}
  slow: {{work_us: 100}}
{ab}"""
AB_BLOCK = "ab:\n  switch: KB_X\n  rounds: 4\n"


def write_bench(folder: Path, kernel: str = "sleep", ab: str = AB_BLOCK) -> Path:
    path = folder / "fake-ab.yaml"
    path.write_text(BENCH.format(kernel=kernel, ab=ab))
    return path


class FakeSides:
    """Answers each side run with results where B (switch=1) is 10 % slower."""

    def __init__(
        self, crash: set[str] = frozenset(), code: int = 1, timer: Callable[[str], str] = str
    ) -> None:
        self.requests: list[SideRequest] = []
        self.crash = crash
        self.code = code
        self.timer = timer  # the timer a run's cells were timed with, by the run's name

    def __call__(self, request: SideRequest) -> int:
        self.requests.append(request)
        request.log_path.write_text("fake log\n")
        if request.run.name in self.crash:
            return self.code
        slow = request.env["KB_X"] == "1"

        def median_of(run: str, variant: str, size: int) -> float:
            return size * 1e-6 * (1.1 if slow else 1.0)

        made = results(request.run.name, request.run.round, median_of,
                       timer=self.timer(request.run.name))
        results_io.save(made, request.run_dir / "results.json")
        return 0


MESSAGES: list[str] = []


def run(tmp_path: Path, sides: FakeSides, out: str = "ab", **options) -> AbOutcome:
    """run_ab on the fake bench; what it echoed is left in MESSAGES."""
    bench = write_bench(tmp_path)
    MESSAGES.clear()
    return run_ab(
        str(bench),
        out=tmp_path / out,
        device="cpu",
        run_side=sides,
        echo=MESSAGES.append,
        **{"schedule": "sequential", **options},
    )


def test_schedule_pins_and_environment(tmp_path):
    sides = FakeSides()
    outcome = run(tmp_path, sides, rounds=4)
    names = [r.run.name for r in sides.requests]
    assert names == ["r1_A", "r1_B", "r2_B", "r2_A", "r3_A", "r3_B", "r4_B", "r4_A"]
    modes = [r.run.pins_mode for r in sides.requests]
    assert modes == ["auto"] + ["replay"] * 7
    first = sides.requests[0]
    switch = {"KERNBENCH_SWITCH": "KB_X", "MILESTONE_FAST": None}  # a side always measures
    assert first.env == {"KB_X": "0", "KERNBENCH_SIDE": "A", "KERNBENCH_ROUND": "1", **switch,
                         "KERNBENCH_SIDE_LOG": str(first.log_path)}
    assert sides.requests[2].env == {
        "KB_X": "1", "KERNBENCH_SIDE": "B", "KERNBENCH_ROUND": "2", **switch,
        "KERNBENCH_SIDE_LOG": str(outcome.folder / "r2_B" / "log.txt"),
    }
    command = sides.requests[3].command
    assert command[1:4] == ["-m", "kernbench", "run"]
    pins = str(outcome.folder / "pins.json")
    assert command[command.index("--pins") + 1] == pins
    assert command[command.index("--pins-mode") + 1] == "replay"
    assert command[command.index("--first-round") + 1] == "2"
    assert command[command.index("--rounds") + 1] == "1"
    assert command[command.index("--out") + 1] == str(outcome.folder / "r2_A")
    assert "--no-figures" in command
    # Replays need the pins file even when nothing was tuned.
    assert json.loads(Path(pins).read_text())["pins"] == {}


def test_a_side_command_starts_a_run_with_the_sides_options(tmp_path, monkeypatch):
    sides = FakeSides()
    outcome = run(tmp_path, sides, rounds=2)
    manifest = load_manifest(outcome.folder)
    request = sides.requests[2]  # r2_B: replays the pins r1_A recorded
    started: list[RunFolder] = []
    monkeypatch.setattr(run_command, "measure", lambda run: started.append(run) or EXIT_OK)
    monkeypatch.setenv("MILESTONE_FAST", "1")  # the side's environment removes it
    for name, value in request.env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert request.command[:4] == [sys.executable, "-m", "kernbench", "run"]
    for made_after in request.run_dir.iterdir():  # the fake's: a run wants a new folder,
        if made_after != request.log_path:  # but for the log its runner opened there
            made_after.unlink()
    result = CliRunner().invoke(cli.app, request.command[3:])
    assert result.exit_code == EXIT_OK, result.output
    (side,) = started
    bench_hash = spec_hash(load_bench(Path(manifest.bench_path)))
    expected = side_options(
        manifest, request.run, outcome.folder / "pins.json", bench_hash,
        outcome.folder / "timers.json",
    )
    assert side.path == request.run_dir
    # created_utc, spec and kernel_source: when the run starts, the bench and the kernel's
    # module it then finds.
    started_with = {"created_utc", "spec", "kernel_source"}
    assert side.options.model_dump(exclude=started_with) == expected.model_dump(
        exclude=started_with
    )
    assert (side.options.side, side.options.first_round, side.options.pins_mode) == (
        "B", 2, "replay"
    )
    assert side.options.figures is False


def test_the_first_sides_timers_are_given_to_every_later_side(tmp_path):
    given: dict[str, dict[str, str]] = {}  # what each side's --timers file held at its start

    class Recording(FakeSides):
        def __call__(self, request: SideRequest) -> int:
            flag = request.command.index("--timers")
            given[request.run.name] = read_timers(Path(request.command[flag + 1]))
            return super().__call__(request)

    sides = Recording(timer=lambda name: "graph" if name == "r1_A" else "event")
    outcome = run(tmp_path, sides, rounds=2)
    timers = read_timers(outcome.folder / "timers.json")
    assert timers and set(timers.values()) == {"graph"}  # r1_A chose; the others replayed
    assert given.pop("r1_A") == {}  # the first side chooses
    assert given and all(held == timers for held in given.values())


def test_a_later_round_and_a_resume_keep_the_timers_of_the_sides_that_stay(tmp_path):
    from kernbench.ab.sides import execute_runs

    sides = FakeSides(timer=lambda name: "graph" if name == "r1_A" else "event")
    outcome = run(tmp_path, sides, rounds=2)
    folder, manifest = outcome.folder, load_manifest(outcome.folder)
    (folder / "timers.json").write_text('{"stale/cell": "event"}')  # a cleared side's
    later = FakeSides(timer=lambda name: "event")
    execute_runs(folder, manifest, "hash", (), later, MESSAGES.append, rounds=[2],
                 kept={"r2_A"})
    timers = json.loads((folder / "timers.json").read_text())
    assert "stale/cell" not in timers and set(timers.values()) == {"graph"}
    assert [r.run.name for r in later.requests] == [
        r.name for r in manifest.runs if r.round == 2 and r.name != "r2_A"]


def test_outputs_and_summarize_reproduces_ab_json(tmp_path):
    outcome = run(tmp_path, FakeSides(), rounds=6)
    folder = outcome.folder
    assert outcome.exit_code == 0
    assert [c.verdict for c in outcome.report.cells] == ["slower"] * 4
    for name in ("ab-run.json", "ab.json", "report.md", "ab.png", "r6_A/status.json"):
        assert (folder / name).is_file(), name
    data = json.loads((folder / "ab.json").read_text())
    assert {"cells", "failed_variants", "summary", "order", "runs", "switch"} <= set(data)
    cell = data["cells"][0]
    for key in (
        "variant", "params", "verdict", "delta_pct", "ci_pct", "ci_coverage",
        "round_deltas_pct", "sign_flips", "within_side_noise_pct", "delta_spread_pct",
        "threshold_pct",
    ):  # fmt: skip
        assert key in cell, key
    assert "| fast/size=100 | slower |" in (folder / "report.md").read_text()

    original = (folder / "ab.json").read_bytes()
    (folder / "ab.json").unlink()
    (folder / "report.md").unlink()
    summarize_ab(folder)
    assert (folder / "ab.json").read_bytes() == original
    assert (folder / "report.md").is_file()

    summarize_ab(folder, min_effect=50.0)
    assert {c.verdict for c in AB_FORMAT.read(folder / "ab.json").cells} == {"same"}


def test_bench_ab_block_supplies_defaults_and_options_override(tmp_path):
    outcome = run(tmp_path, FakeSides())
    manifest = load_manifest(outcome.folder)
    assert (manifest.switch, manifest.rounds, manifest.a, manifest.b) == ("KB_X", 4, "0", "1")
    assert manifest.variants == ["fast", "slow"]
    other = run(tmp_path, FakeSides(), out="ab2", rounds=2, b="2", min_effect=0.5)
    manifest = load_manifest(other.folder)
    assert (manifest.rounds, manifest.b, manifest.min_effect) == (2, "2", 0.5)


def test_a_crashed_side_fails_every_variant_and_exits_1(tmp_path):
    outcome = run(tmp_path, FakeSides(crash={"r2_B"}), rounds=4)
    assert outcome.exit_code == 1
    assert outcome.report.failed_variants == {"fast": [2], "slow": [2]}
    assert {tuple(c.failed_rounds) for c in outcome.report.cells} == {(2,)}  # rounds 1, 3, 4
    assert len(outcome.report.cells) == 4
    reasons = {f.reason for f in outcome.report.failed_runs}
    assert reasons == {"exited with exit code 1 and wrote no results.json"}
    assert any("failed: fast in round 2" in m for m in MESSAGES)
    report = (outcome.folder / "report.md").read_text()
    assert "r2_B/log.txt" in report and "## Failures" in report


def test_a_side_killed_by_a_signal_is_said_so_as_run_says_it(tmp_path):
    outcome = run(tmp_path, FakeSides(crash={"r2_B"}, code=-9), rounds=2)
    reasons = {f.reason for f in outcome.report.failed_runs}
    assert reasons == {"exited with signal SIGKILL (killed: out of memory?) and wrote no "
                       "results.json"}


def test_without_the_recording_run_the_rest_is_skipped(tmp_path):
    sides = FakeSides(crash={"r1_A"})
    outcome = run(tmp_path, sides, rounds=2)
    assert [r.run.name for r in sides.requests] == ["r1_A"]
    assert outcome.report.failed_variants == {"fast": [1, 2], "slow": [1, 2]}
    assert "not run: the first run (r1_A)" in (outcome.folder / "r2_A" / "log.txt").read_text()
    assert outcome.exit_code == 1


def test_a_rejected_first_run_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match=r"the first run \(r1_A\) rejected its input: fake log"):
        run(tmp_path, FakeSides(crash={"r1_A"}, code=2), rounds=2)


def test_warns_when_the_kernel_source_never_names_the_switch(tmp_path):
    run(tmp_path, FakeSides(), rounds=2)
    assert any(m.startswith("warning: KB_X appears nowhere in") for m in MESSAGES)


def test_a_switch_nothing_reads_is_said_in_the_reports_and_beside_the_verdicts(tmp_path):
    # Every cell of such an A/B reads `same`; a warning printed only before the rounds
    # scrolls away, and ab.json, report.md and report.html would show a clean pass.
    outcome = run(tmp_path, FakeSides(), rounds=2)
    warning = next(m for m in MESSAGES if m.startswith("warning: KB_X appears nowhere in"))
    closing = MESSAGES[[m.startswith("verdicts: ") for m in MESSAGES].index(True):]
    assert closing[1] == warning  # said again beside the verdicts
    folder = outcome.folder
    assert summarize_ab(folder).switch_note == warning
    assert f"- Switch check (warning): {warning.removeprefix('warning: ')}\n" in (
        folder / "report.md").read_text()
    assert "<li>Switch check (warning): KB_X appears nowhere" in (
        folder / "report.html").read_text()


def test_no_warning_when_the_kernel_module_reads_the_switch(tmp_path):
    (tmp_path / "reads.py").write_text(
        "import os\n\ndef make(**params):\n    slow = os.environ.get('KB_X') == '1'\n"
        "    return lambda: None\n"
    )
    write_bench(tmp_path, kernel="reads:make")
    messages: list[str] = []
    run_ab(
        str(tmp_path / "fake-ab.yaml"), out=tmp_path / "ab", device="cpu",
        run_side=FakeSides(), echo=messages.append, rounds=2, schedule="sequential",
    )  # fmt: skip
    assert not any("KB_X appears nowhere" in m for m in messages)


@pytest.mark.parametrize(
    ("options", "ab", "message"),
    [
        ({}, "", r"--switch: bench 'fake-ab' has no ab: block naming a switch; give --switch VAR"),
        ({"switch": "1BAD"}, "", r"--switch: '1BAD' is not an environment variable name"),
        ({"switch": "KERNBENCH_ROUND"}, "", r"--switch: KERNBENCH_ROUND is set by kernbench "
         r"in every side's process"),
        ({"a": "1"}, AB_BLOCK, r"--a/--b: both sides would set KB_X=1"),
        ({"rounds": 1}, AB_BLOCK, r"--rounds: 1: give 2 to 100"),
        ({"min_effect": -1.0}, AB_BLOCK, r"^--min-effect: -1 is not within 0 to 1000$"),
        # a default (or the block's value for its own switch) is no variant: name the
        # option not given, not a '1' the user never typed
        ({"switch": "variant", "a": "fast"}, AB_BLOCK, r"^--b: an A/B of the variant names "
         r"two of bench 'fake-ab''s variants: fast, slow$"),
        ({"switch": "variant"}, "", r"^--a/--b: an A/B of the variant"),
        # recorded and never used: a sequential side takes no turns
        ({"turn_ms": 10.0}, AB_BLOCK, r"^--turn-ms: the sequential schedule takes no turns"),
    ],
)
def test_bad_options_are_user_errors(tmp_path, options, ab, message):
    bench = write_bench(tmp_path, ab=ab)
    with pytest.raises(UserError, match=message):
        run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=FakeSides(),
               **{"schedule": "sequential", **options})


def test_refuses_a_non_empty_out_folder(tmp_path):
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "x").write_text("")
    with pytest.raises(UserError, match="is not empty"):
        run(tmp_path, FakeSides())


def test_out_left_by_an_ab_killed_as_it_saved_its_plan_is_a_new_folder(tmp_path):
    # A kill -9 between ab-run.json's temporary and its rename leaves both beside the lock:
    # no plan, so nothing to resume, and the folder must take a new A/B.
    folder = tmp_path / "ab"
    folder.mkdir()
    (folder / "run.lock").write_text("")
    (folder / ".ab-run.json.k3x_9qz1").write_text('{"schema_ver')
    with pytest.raises(UserError, match=r"not an A/B folder \(no ab-run.json\)"):
        resume_ab(folder, run_side=FakeSides())
    run(tmp_path, FakeSides())
    assert (folder / "ab-run.json").is_file()


def test_summarize_needs_an_ab_folder(tmp_path):
    with pytest.raises(UserError, match=r"not an A/B folder \(no ab-run.json\)"):
        summarize_ab(tmp_path)


def test_a_variant_option_naming_the_switch_counts_as_reading_it(tmp_path):
    from kernbench.ab.switch_check import switch_warning

    source = tmp_path / "kernel.py"
    source.write_text("import os\n\ndef make(switch=None, **params):\n"
                      "    return lambda: os.environ.get(switch)\n")
    assert switch_warning("KB_X", "k", source, {"v": {"switch": "KB_X"}}) is None
    assert switch_warning("KB_X", "k", source, {"v": {"switch": "KB_Y"}}) is not None


def test_no_warning_for_the_sleep_kernel_reading_the_variable_its_switch_option_names(
    tmp_path,
):
    bench = tmp_path / "fake-ab.yaml"
    bench.write_text(BENCH.format(kernel="sleep", ab=AB_BLOCK).replace(
        "fast: {work_us: 50}", "fast: {work_us: 50, switch: KB_X}"))
    messages: list[str] = []
    run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=FakeSides(),
           echo=messages.append, rounds=2, schedule="sequential")
    assert not any("KB_X appears nowhere" in m for m in messages)


def test_a_library_variable_gets_a_note_not_a_warning(tmp_path):
    from kernbench.ab.switch_check import switch_warning

    source = tmp_path / "kernel.py"
    source.write_text("def make(**params):\n    return lambda: None\n")
    note = switch_warning("NCCL_ALGO", "collective", source)
    assert note is not None and note.startswith("note: NCCL_ALGO is read by NCCL")
    warning = switch_warning("KB_TYPO", "collective", source)
    assert warning is not None and warning.startswith("warning: KB_TYPO appears nowhere")
    # An A/B of a switch nothing read ended `unstable` on a noisy machine, under a warning
    # that said it could only say 'same'.
    assert warning.endswith("both sides run the same code, and any verdict but 'same' is "
                            "noise")


class OneBadRound(FakeSides):
    """B is 10 % slower, except that in round 1 the `slow` variant's B reads 5 % faster."""

    def __call__(self, request: SideRequest) -> int:
        self.requests.append(request)
        request.log_path.write_text("fake log\n")
        slow = request.env["KB_X"] == "1"

        def median_of(run: str, variant: str, size: int) -> float:
            if not slow:
                return size * 1e-6
            outlier = request.run.round == 1 and variant == "slow"
            return size * 1e-6 * (0.95 if outlier else 1.1)

        made = results(request.run.name, request.run.round, median_of)
        results_io.save(made, request.run_dir / "results.json")
        return 0


def test_rounds_auto_adds_rounds_until_every_cell_is_decided(tmp_path):
    outcome = run(tmp_path, OneBadRound(), rounds="auto:12")
    report = outcome.report
    # Nine rounds is the fewest whose 95% interval leaves out the extreme delta.
    assert report.rounds == 9 and report.max_rounds == 12
    assert {c.verdict for c in report.cells} == {"slower"}
    assert {c.rounds_needed for c in report.cells if c.variant == "slow"} == {9}
    # `fast` is slower from round 1 on, but 6 rounds are the fewest whose interval reaches 95 %.
    assert {c.rounds_needed for c in report.cells if c.variant == "fast"} == {6}
    assert load_manifest(outcome.folder).rounds == 9
    assert any("unstable after 6 rounds: round 7 of at most 12" in m for m in MESSAGES)


def test_rounds_auto_stops_at_its_maximum(tmp_path):
    outcome = run(tmp_path, OneBadRound(), rounds="auto:7")
    assert outcome.report.rounds == 7
    assert {c.verdict for c in outcome.report.cells if c.variant == "slow"} == {"unstable"}


@pytest.mark.parametrize(("value", "parsed"), [
    ("8", (8, None)), ("auto", (6, 20)), ("auto:9", (6, 9)), (5, (5, None)),
])
def test_rounds_parse(value, parsed):
    assert parse_rounds(value) == parsed


@pytest.mark.parametrize("value", ["auto:", "six", "auto:x", "-1"])
def test_bad_rounds_are_one_line_errors(value):
    with pytest.raises(UserError, match="--rounds"):
        parse_rounds(value)


@pytest.mark.parametrize(("fail_on", "code"), [(None, 0), ("slower", 1), ("any", 1),
                                                ("faster", 0)])
def test_fail_on_turns_a_verdict_into_a_ci_failure(tmp_path, fail_on, code):
    bench = write_bench(tmp_path)
    outcome = ab(str(bench), None, fail_on=fail_on, out=tmp_path / "ab", device="cpu",
                 run_side=FakeSides(), echo=MESSAGES.append, schedule="sequential", rounds=6)
    assert {c.verdict for c in outcome.report.cells} == {"slower"}
    assert outcome.exit_code == code


def test_a_gate_is_refused_before_anything_runs_where_no_interval_reaches_95_percent(
    tmp_path,
):
    # 4 rounds: each interval is the min-max, 87.5 %; a switch that does nothing would be
    # called faster or slower by chance in up to 1 cell in 8, which a gate would act on.
    with pytest.raises(UserError, match=r"^--fail-on slower: a gate needs intervals of 95% "
                       r"coverage, which take 6 rounds; 4 give 87.5%, .*: give more "
                       r"--rounds, or auto$"):
        ab(str(write_bench(tmp_path)), None, fail_on="slower", out=tmp_path / "ab",
           device="cpu", run_side=FakeSides(), echo=MESSAGES.append, schedule="sequential")
    assert not (tmp_path / "ab").exists()
    auto = ab(str(write_bench(tmp_path)), None, fail_on="slower", out=tmp_path / "auto",
              device="cpu", run_side=FakeSides(), echo=MESSAGES.append,
              schedule="sequential", rounds="auto")
    assert auto.exit_code == 1  # auto starts at 6 rounds: the gate stands


def test_resuming_a_short_ab_under_a_gate_is_refused(tmp_path):
    outcome = run(tmp_path, FakeSides(), rounds=2)
    with pytest.raises(UserError, match=r"2 give 50\.0%.*: resume .* without --fail-on$"):
        ab(None, outcome.folder, fail_on="any")


def test_a_bad_fail_on_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(UserError, match="--fail-on: 'worse' is not one of slower, faster, any"):
        ab(str(write_bench(tmp_path)), None, fail_on="worse", out=tmp_path / "ab")
    assert not (tmp_path / "ab").exists()


def test_a_metric_that_cannot_compute_stops_the_ab_before_any_side_runs(tmp_path):
    bench = write_bench(tmp_path, ab=AB_BLOCK + "metrics:\n  flops: size/0\n")
    sides = FakeSides()
    with pytest.raises(SpecError, match=r"metrics\.flops: division by zero"):
        run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=sides,
               schedule="sequential")
    assert sides.requests == []
