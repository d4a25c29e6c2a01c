"""Bad input across the commands: a bench file, a results file, an option or a variable
that is wrong is one line on stderr naming the file (and its line and field where it has
them), exit 2, never a traceback (`cli_helpers.invoke` fails on one)."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path
from typing import Any

import pytest
from ab_fixtures.build import manifest, outcomes, results
from cli_helpers import invoke

from kernbench.ab.analysis import analyze
from kernbench.ab.schedule import side_env, with_changes
from kernbench.errors import EXIT_OK, EXIT_USAGE
from kernbench.execute import requirements
from kernbench.worker_env import FAST_ENV

HEAD = "name: b\ndescription: d\nkernel: sleep\n"
AXIS = HEAD + "axes: {work_us: [1, 2]}\n"

# (bench file's text, what its one line says after `bench.yaml`: the line and the field)
BENCHES: dict[str, tuple[str | bytes, str]] = {
    "malformed": (HEAD + "axes: {work_us: [1, 2\n", ":5: yaml: expected ',' or ']'"),
    "tab": (HEAD + "axes:\n\twork_us: [1]\n", ":5: yaml: found character '\\t'"),
    "duplicate key": (HEAD + "timer:\n  budget_s: 0.1\n  budget_s: 0.2\n",
                      ":6: timer.budget_s: duplicate key (first on line 5)"),
    "wrong type": (HEAD + "rounds: many\n", ":4: rounds: Input should be a valid integer"),
    "unknown field": (HEAD + "colour: red\n", ":4: colour: unknown key; known: name,"),
    "empty": ("", ": empty file; expected a mapping of bench fields"),
    "a list": ("- name: b\n", ":1: expected a mapping of bench fields, not a list"),
    "huge rounds": (HEAD + "rounds: 99999999999999999999999\n",
                    ":4: rounds: Input should be less than or equal to 100"),
    "negative rounds": (HEAD + "rounds: -1\n", ":4: rounds: Input should be greater than"),
    "zero rounds": (HEAD + "rounds: 0\n", ":4: rounds: Input should be greater than"),
    "unicode key": (HEAD + "axes: {wörk: [1]}\n", ":4: axes.wörk: String should match"),
    "not UTF-8": ((HEAD + "description: \xff\n").encode("latin-1"),
                  ": cannot read: 'utf-8' codec can't decode"),
    "NUL": (HEAD.encode() + b"axes: {work_us: [1]}\x00\n",
            ":4: yaml: unacceptable character #x0000: special characters are not allowed"),
    "control character": (HEAD.replace("description: d", 'description: "a\x07b"'),
                          ":2: yaml: unacceptable character #x0007"),
    "undefined alias": (HEAD + "axes: *nope\n", ":4: yaml: found undefined alias 'nope'"),
    "anchor key": (HEAD + "x: &x [1]\naxes: {work_us: *x}\n", ":4: x: unknown key"),
    "exclude value": (AXIS + "exclude:\n  - {work_us: 3}\n",
                      ":6: exclude.0.work_us: 3 is not a value work_us takes here (1, 2)"),
    "exclude key": (AXIS + "exclude:\n  - {nokey: 3}\n", ":6: exclude.0.nokey: unknown key"),
    "expression syntax": (AXIS + "metrics:\n  flops: 2*work_us*(\n",
                          ":6: metrics.flops: invalid syntax in '2*work_us*('"),
    "division by zero": (AXIS + "metrics:\n  flops: work_us/0\n",
                         ":6: metrics.flops: division by zero in 'work_us/0'"),
    "complex power": (AXIS + "metrics:\n  flops: (-8)**0.5\n",
                      ":6: metrics.flops: a negative number to a fractional power is not a "
                      "real number in '(-8)**0.5'"),
    "axis of no values": (HEAD + "axes: {work_us: []}\n",
                          ":4: axes.work_us: List should have at least 1 item"),
    "nested too deep": (HEAD + "axes: {work_us: " + "[" * 2000 + "]" * 2000 + "}\n",
                        ": yaml: document nested too deeply"),
}


@pytest.mark.parametrize("command", [["validate"], ["plan", "--device", "cpu", "--bench"]])
@pytest.mark.parametrize("case", BENCHES)
def test_a_bad_bench_file_is_one_line_at_its_line_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], case: str
) -> None:
    monkeypatch.chdir(tmp_path)
    text, said = BENCHES[case]
    Path("bench.yaml").write_bytes(text if isinstance(text, bytes) else text.encode())
    code, out, err = invoke(*command, "bench.yaml")
    assert (code, out, err.count("\n")) == (EXIT_USAGE, "", 1), err
    assert err.startswith("bench.yaml" + said), err


# --- results files, as render, export, report, compare and merge read them ----------------

SPEC = {"name": "fake", "description": "d", "kernel": "sleep"}


def sound() -> dict[str, Any]:
    data = results("r1_A", 1, lambda run, variant, size: size * 1e-6).model_dump(mode="json")
    return {**data, "spec": dict(SPEC)}


def changed(path: list[Any], value: Any) -> bytes:
    data = sound()
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(data).encode()


TEXT = json.dumps(sound()).encode()
# (file name, its bytes, what its one line says after the path)
DAMAGED: dict[str, tuple[str, bytes, str]] = {
    "truncated": ("r.json", TEXT[: len(TEXT) // 2], ":1: not valid JSON: "),
    "not JSON": ("r.json", b"hello", ":1: not valid JSON: Expecting value"),
    "empty": ("r.json", b"", ":1: not valid JSON: Expecting value"),
    "a list": ("r.json", b"[1]", ": not a results file (a JSON object is expected)"),
    "newer version": ("r.json", changed(["schema_version"], 99),
                      ": schema_version: 99 is newer than this kernbench understands"),
    "missing field": ("r.json", json.dumps({k: v for k, v in sound().items() if k != "bench"})
                      .encode(), ": bench: Field required"),
    "wrong type": ("r.json", changed(["cells", 0, "rounds", 0, "median_s"], "fast"),
                   ": cells.0.rounds.0.median_s: Input should be a valid number"),
    "corrupt xz": ("r.json.xz", lzma.compress(TEXT)[:100],
                   ": not a readable results file: Compressed file ended"),
    "corrupt gz": ("r.json.gz", gzip.compress(TEXT)[:100],
                   ": not a readable results file: Compressed file ended"),
    "spec timer": ("r.json", changed(["spec", "timer"], "fast"),
                   ": spec.timer: Input should be a valid dictionary"),
    "spec figures": ("r.json", changed(["spec", "figures"], 5),
                     ": spec.figures: Input should be a valid list"),
    "spec rates": ("r.json", changed(["spec", "rates"], 5),
                   ": spec.rates: Input should be a valid list"),
    "spec rates text": ("r.json", changed(["spec", "rates"], "bytesx"),
                        ": spec.rates: Input should be a valid list"),
    "hardware": ("r.json", changed(["hardware"], {"name": "x"}),
                 ": hardware.description: Field required"),
}


@pytest.mark.parametrize("command", ["render", "export", "report", "compare", "merge"])
@pytest.mark.parametrize("case", DAMAGED)
def test_a_damaged_results_file_is_one_line_naming_it(
    tmp_path: Path, command: str, case: str
) -> None:
    name, content, said = DAMAGED[case]
    damaged = tmp_path / name
    damaged.write_bytes(content)
    other = tmp_path / "sound.json"
    other.write_bytes(TEXT)
    args = {
        "render": ["render", damaged, "--out", tmp_path / "figures"],
        "export": ["export", damaged],
        "report": ["report", damaged, "--out", tmp_path / "report"],
        "compare": ["compare", damaged, other],
        "merge": ["merge", damaged, other, "--out", tmp_path / "m.json", "--no-figures"],
    }[command]
    code, out, err = invoke(*map(str, args))
    assert (code, out, err.count("\n")) == (EXIT_USAGE, "", 1), err
    assert err.startswith(f"{damaged}{said}"), err


def test_export_refuses_a_recorded_bench_it_cannot_read(tmp_path: Path) -> None:
    """Export computes each round's metrics again from the bench the results record."""
    damaged = tmp_path / "r.json"
    damaged.write_bytes(changed(["spec"], {"name": "fake"}))
    assert invoke("export", str(damaged)) == (
        EXIT_USAGE, "", f"{damaged}: spec.description: Field required\n")


def test_a_round_median_that_is_no_time_is_left_out_of_compare(tmp_path: Path) -> None:
    """A graph or event timer subtracts its overhead, so a round median can be negative:
    it has no log ratio, and compare leaves the round out instead of failing."""
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_bytes(changed(["cells", 0, "rounds", 0, "median_s"], -1e-6))
    new.write_bytes(TEXT)
    code, out, err = invoke("compare", str(base), str(new))
    assert (code, err) == (EXIT_OK, "")
    assert "Failed or invalid in BASE: fast/size=100" in out


def test_an_ab_side_whose_round_median_is_no_time_fails_that_round() -> None:
    plan = manifest(rounds=6)

    def median_of(run: str, variant: str, size: int) -> float:
        return -1e-6 if (run, variant, size) == ("r2_B", "fast", 100) else size * 1e-6

    report = analyze(plan, outcomes(plan, median_of))
    assert report.failed_variants == {"fast": [2]}
    assert {cell.verdict for cell in report.cells} == {"same"}


@pytest.mark.parametrize("command", [["summarize"], ["ab", "--resume"]])
def test_an_ab_plan_that_lost_a_run_is_one_line(tmp_path: Path, command: list[str]) -> None:
    plan = manifest(rounds=2).model_dump(mode="json")
    plan["runs"] = [run for run in plan["runs"] if run["name"] != "r2_B"]
    (tmp_path / "ab-run.json").write_text(json.dumps(plan))
    assert invoke(*command, str(tmp_path)) == (
        EXIT_USAGE, "", f"{tmp_path / 'ab-run.json'}: round 2 has no A and B runs\n")


# --- options and variables ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["plan", "--bench", "{bench}", "--only", "work_us=1\n2"],
         "--only: 'work_us=1\\n2' is not KEY=VALUE[,VALUE...]"),
        (["plan", "--bench", "{bench}", "--only", "work_us"],
         "--only: 'work_us' is not KEY=VALUE[,VALUE...]"),
        (["plan", "--bench", "{bench}", "--only", "work_us=9"],
         "--only: no cell has work_us=9; work_us takes 1, 2"),
        (["plan", "--bench", "{tmp}/none.yaml"], "{tmp}/none.yaml: bench file not found"),
        (["plan", "--bench", "{tmp}"], "{tmp}: cannot read: not a regular file"),
        (["run", "--bench", "{bench}", "--out", "{bench}"],
         "--out: {bench} is a file; give a folder"),
        (["run", "--bench", "{bench}", "--pins", "{tmp}"],
         "--pins: {tmp}: is a folder, not a pins file"),
        (["run", "--resume", "{tmp}", "--bench", "{bench}"],
         "--resume: the run goes on with its own settings (run.json); drop --bench"),
        (["render", "{tmp}/none.json"], "{tmp}/none.json: results file not found"),
        (["compare", "{tmp}", "{tmp}"], "{tmp}: is a folder, not a results file"),
        (["summarize", "{bench}"], "{bench}: not an A/B folder (no ab-run.json)"),
        (["ab", "--bench", "{bench}", "--switch", "X", "--device", "tpu"],
         "--device: unknown device 'tpu'; choose cpu, cuda or auto"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(tmp_path: Path, args: list[str], said: str) -> None:
    bench = tmp_path / "b.yaml"
    bench.write_text(AXIS)
    given = [arg.format(bench=bench, tmp=tmp_path) for arg in args]
    assert invoke(*given) == (EXIT_USAGE, "", said.format(bench=bench, tmp=tmp_path) + "\n")


def test_an_ab_side_measures_whatever_fast_mode_the_shell_asks_of_plain_runs() -> None:
    """MILESTONE_FAST=1 (or a value fast mode refuses) in the A/B's shell would turn each
    sequential side's `kernbench run` into a redraw of committed data, or an error."""
    plan = manifest(rounds=2)
    env = with_changes({FAST_ENV: "1", "HOME": "/h"}, side_env(plan, plan.runs[0]))
    assert FAST_ENV not in env and env["HOME"] == "/h"


def test_calibrate_on_a_machine_without_cuda_names_the_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(requirements, "_cuda_available", lambda: False)
    assert invoke("calibrate", "--device", "cuda") == (
        EXIT_USAGE, "", "--device: cuda asked for, but torch with a CUDA device is not here\n")
