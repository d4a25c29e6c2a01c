"""Random results files at render, merge and summarize, random journal damage at
`--resume`: exit 0, 1 or 2 only, never a traceback, never a hang (issue 12)."""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from ab_fixtures.build import results
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from time_limit import time_limit
from typer.testing import CliRunner

from kernbench import cli
from kernbench.ab.run import run_ab
from kernbench.ab.sides import SideRequest
from kernbench.commands.run import RunRequest, run
from kernbench.errors import EXIT_OK
from kernbench.results import model as results_io

runner = CliRunner()
SECONDS_PER_COMMAND = 10
SOUND = results("r1_A", 1, lambda run, variant, size: size * 1e-6).model_dump(mode="json")

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.text(max_size=8), children, max_size=3)),
    max_leaves=8,
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """The sound results with one value, somewhere in the tree, replaced."""
    data = json.loads(json.dumps(SOUND))
    node: Any = data
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return data
        key = draw(st.sampled_from(keys))
        child = node[key]
        if not isinstance(child, dict | list) or draw(st.booleans()):
            node[key] = draw(json_values)
            return data
        node = child


def encoded(data: Any) -> bytes:
    return json.dumps(data).encode()


contents = st.one_of(
    st.binary(max_size=64),
    st.integers(0, len(encoded(SOUND))).map(lambda cut: encoded(SOUND)[:cut]),
    mutated().map(encoded),
    json_values.map(encoded),
    st.just(encoded(SOUND)),
    st.sampled_from([b"9" * 5000, b"[" * 100_000, b'{"cells": ' * 3000, b"\xff\xfe{"]),
)
files = st.tuples(contents, st.sampled_from(["plain", "gzip", "cut gzip"]))


def write(path: Path, content: bytes, how: str) -> Path:
    if how == "plain":
        path.write_bytes(content)
        return path
    packed = gzip.compress(content)
    target = path.with_name(path.name + ".gz")
    target.write_bytes(packed if how == "gzip" else packed[: len(packed) // 2])
    return target


def invoke(*argv: str) -> None:
    with time_limit(SECONDS_PER_COMMAND):
        result = runner.invoke(cli.app, list(argv))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        argv, result.output, result.exception
    )
    assert result.exit_code in (0, 1, 2), (argv, result.output)
    assert "Traceback" not in result.output


class Sides:
    def __call__(self, request: SideRequest) -> int:
        made = results(request.run.name, request.run.round, lambda r, v, size: size * 1e-6)
        results_io.save(made.model_copy(update={"complete": True}),
                        request.run_dir / "results.json")
        return 0


@pytest.fixture(scope="module")
def ab_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ab")
    bench = folder / "fake.yaml"
    bench.write_text("name: fake\ndescription: d\nkernel: sleep\naxes: {size: [100, 400]}\n"
                     "variants: {fast: {work_us: 5}, slow: {work_us: 9}}\n")
    run_ab(str(bench), switch="KB_X", rounds=2, schedule="sequential", out=folder / "ab",
           device="cpu", run_side=Sides(), echo=lambda line: None)
    return folder / "ab"


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(first=files, second=files, target=st.sampled_from(
    ["r1_A/results.json", "r2_B/results.json", "ab-run.json", "r1_B/status.json"]))
def test_random_results_files_at_render_merge_and_summarize(
    ab_folder: Path, first: tuple[bytes, str], second: tuple[bytes, str], target: str
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        one = write(where / "one.json", *first)
        two = write(where / "two.json", *second)
        invoke("render", str(one), "--out", str(where / "figures"))
        invoke("merge", str(one), str(two), "--out", str(where / "merged.json"), "--no-figures")
        folder = Path(shutil.copytree(ab_folder, where / "ab"))
        (folder / target).write_bytes(first[0])
        invoke("summarize", str(folder))


# --- journal damage at --resume ----------------------------------------------------------

BENCH = textwrap.dedent("""\
    name: nap
    description: short spins
    kernel: sleep
    axes: {work_us: [5, 10, 15]}
    timer: {warmup_s: 0.0, budget_s: 0.005, min_samples: 3}
    rounds: 2
    """)


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("measured")
    (folder / "nap.yaml").write_text(BENCH)
    out = folder / "out"
    assert run(RunRequest(bench=str(folder / "nap.yaml"), out=out, device="cpu",
                          figures=False)) == EXIT_OK
    return out


def damage(path: Path, how: str, junk: bytes) -> None:
    if how == "delete":
        path.unlink(missing_ok=True)
    elif how == "truncate":
        path.write_bytes(path.read_bytes()[: len(junk)] if path.exists() else junk)
    elif how == "junk":
        path.write_bytes(junk)
    elif how == "empty":
        path.write_bytes(b"")


damages = st.lists(
    st.tuples(
        st.sampled_from([f"journal/r{r}/{i:05d}.json" for r in (1, 2) for i in range(3)]
                        + ["journal/r1/current.json", "tasks/r1.json", "run.lock", "pins.json",
                           "results.json", "run.json"]),
        st.sampled_from(["delete", "truncate", "junk", "empty"]),
        st.binary(max_size=40),
    ),
    min_size=1, max_size=4,
)


@pytest.mark.slow
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(damaged=damages)
def test_random_journal_damage_at_resume(
    measured: Path, damaged: list[tuple[str, str, bytes]]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(shutil.copytree(measured, Path(scratch) / "out"))
        for name, how, junk in damaged:
            damage(folder / name, how, junk)
        invoke("run", "--resume", str(folder))
