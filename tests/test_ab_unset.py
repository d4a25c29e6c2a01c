"""A side that leaves the switch unset (`--a-unset`, `a: null`): not the empty string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ab_fixtures.sides import Sides
from test_ab_sides import FakeSides, write_bench
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.run import resume_ab, run_ab
from kernbench.ab.schedule import load_manifest, with_changes
from kernbench.ab.settings import AbChoices, resolve_settings
from kernbench.errors import EXIT_USAGE, UserError
from kernbench.render.ab import ab_figure
from kernbench.results.kinds import AB_MANIFEST_NAME
from kernbench.spec.loader import load_bench


def test_side_a_runs_without_the_switch_and_every_output_says_unset(tmp_path: Path) -> None:
    sides, lines = FakeSides(), []
    outcome = run_ab(str(write_bench(tmp_path)), out=tmp_path / "ab", device="cpu",
                     run_side=sides, echo=lines.append, schedule="sequential", rounds=2,
                     a_unset=True)
    a_env = next(r.env for r in sides.requests if r.run.side == "A")
    assert a_env["KB_X"] is None
    # Set in the shell that started the A/B, it is still gone from side A's process.
    assert "KB_X" not in with_changes({"KB_X": "0", "PATH": "/bin"}, a_env)
    assert with_changes({"KB_X": "0"}, {"KB_X": ""}) == {"KB_X": ""}  # empty: set, not unset
    assert json.loads((outcome.folder / AB_MANIFEST_NAME).read_text())["a"] is None
    assert (outcome.report.a, outcome.report.b) == (None, "1")
    assert {c.verdict for c in outcome.report.cells} == {"slower"}
    assert any(line.startswith("[1/4] r1 A (KB_X unset, pins auto)") for line in lines)
    assert "A: `KB_X unset`, B: `KB_X=1`;" in (outcome.folder / "report.md").read_text()
    assert "A: <code>KB_X unset</code>, B: <code>KB_X=1</code>;" in \
        (outcome.folder / "report.html").read_text()
    figure = ab_figure(outcome.report)
    assert figure is not None
    (axes,) = figure.axes
    assert axes.get_title() == "fake-ab: KB_X=1 vs KB_X unset, 2 rounds"


def test_a_resumed_ab_keeps_the_side_unset(tmp_path: Path) -> None:
    bench = write_bench(tmp_path, ab="ab:\n  switch: KB_X\n  a: '1'\n  b: null\n")
    run_ab(str(bench), out=tmp_path / "ab", device="cpu", run_side=Sides(stop="r2_A"),
           echo=lambda line: None, schedule="sequential", rounds=3)
    sides = FakeSides()
    outcome = resume_ab(tmp_path / "ab", run_side=sides, echo=lambda line: None)
    assert load_manifest(outcome.folder).b is None
    resumed = {r.run.name: r.env["KB_X"] for r in sides.requests}
    assert "r3_B" in resumed
    assert resumed == {name: None if name.endswith("B") else "1" for name in resumed}
    assert (outcome.report.a, outcome.report.b) == ("1", None)
    result = CliRunner().invoke(cli.app, ["ab", "--resume", str(outcome.folder), "--a-unset"])
    assert (result.exit_code, result.stderr) == (
        EXIT_USAGE,
        "--resume: the A/B goes on with its own settings (ab-run.json); drop --a-unset\n")


@pytest.mark.parametrize(("block", "options", "message"), [
    ("", {"a": "0", "a_unset": True},
     "--a/--a-unset: give one: a value, or the variable unset"),
    ("ab:\n  switch: KB_X\n  a: null\n", {"b_unset": True},
     "--a/--b: both sides would leave KB_X unset"),
    ("", {"switch": "variant", "a": "fast", "b_unset": True},
     "--b: an A/B of the variant names a variant on each side; none can be unset"),
])
def test_unset_sides_that_make_no_ab_are_refused(
    tmp_path: Path, block: str, options: dict[str, object], message: str
) -> None:
    bench = load_bench(write_bench(tmp_path, ab=block))
    choices = AbChoices(**{"switch": "KB_X", **options})  # type: ignore[arg-type]
    with pytest.raises(UserError) as caught:
        resolve_settings(bench, choices)
    assert caught.value.message == message


def test_the_bench_block_says_unset_with_null_and_empty_with_quotes(tmp_path: Path) -> None:
    bench = load_bench(write_bench(tmp_path, ab="ab:\n  switch: KB_X\n  a: null\n  b: ''\n"))
    settings = resolve_settings(bench, AbChoices())
    assert (settings.a, settings.b) == (None, "")
    assert resolve_settings(bench, AbChoices(a="2")).a == "2"  # the command line over the block


def test_the_bench_block_takes_a_whole_number_as_its_digits(tmp_path: Path) -> None:
    bench = load_bench(write_bench(tmp_path, ab="ab:\n  switch: KB_X\n  a: 0\n  b: 8\n"))
    assert (bench.ab.a, bench.ab.b) == ("0", "8")


@pytest.mark.parametrize("value", ["on", "1.50", "true"])
def test_the_bench_block_refuses_a_value_yaml_reads_as_other_text(
    tmp_path: Path, value: str
) -> None:
    path = write_bench(tmp_path, ab=f"ab:\n  switch: KB_X\n  a: {value}\n")
    a_line = path.read_text().splitlines().index(f"  a: {value}") + 1
    with pytest.raises(UserError, match=rf"^{path}:{a_line}: ab.a: .*quote the value"):
        load_bench(path)
