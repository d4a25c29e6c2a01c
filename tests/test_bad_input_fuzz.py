"""Bad input across the commands: a bench file, a results file, an option or a variable
that is wrong is one line on stderr naming the file (and its line and field where it has
them), exit 2, never a traceback (`cli_helpers.invoke` fails on one)."""


from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke

from kernbench.errors import EXIT_USAGE

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
