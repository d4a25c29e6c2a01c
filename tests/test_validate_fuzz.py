"""Random bench documents through `validate` and `plan`: exit 0, 1 or 2 only, never a
traceback, never a hang; and a bench that validates computes every metric on every cell,
so nothing fails after it is measured (issue 12)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from time_limit import time_limit
from typer.testing import CliRunner

from kernbench import cli
from kernbench.analyze.metrics import cell_metrics
from kernbench.errors import EXIT_OK
from kernbench.plan import plan
from kernbench.spec import expr
from kernbench.spec.loader import load_bench
from kernbench.spec.models import derived_names

runner = CliRunner()
SECONDS_PER_COMMAND = 10
CELLS_MEASURED = 500

# Mostly sound values with a few wrong ones mixed in, so that most documents get past the
# models to the checks behind them (cell counts, factories, metrics on every cell).
names = st.sampled_from(["work_us", "chunks", "M", "N", "a", "b", "dtype", "device", "x"])
numbers = st.integers(0, 300)
scalars = st.one_of(
    numbers, numbers, st.sampled_from([0.5, 1e308, math.inf, math.nan, True, "fp32", "x"])
)
axis_values = st.one_of(
    st.lists(numbers, min_size=1, max_size=3),
    st.lists(numbers, min_size=1, max_size=3),
    st.sampled_from([1, 2, 50]).map(lambda n: list(range(1, n + 1))),
    st.lists(scalars, max_size=3),
    st.lists(st.fixed_dictionaries({"M": numbers, "N": numbers, "K": scalars}), min_size=1,
             max_size=2),
)
# Metric templates over the names the bench's own axes and options give, so that most
# metrics get past the name check to the evaluation on every cell.
METRICS = (
    "{a}/0", "min({a})", "log2({a})", "sqrt({a} - 2)", "1/({a} - 1)", "{a}/{b}", "{a}*{b}",
    "2*{a}", "abs({a}, {b})", "1e308*{a}", "10**400", "1e308*10", "itemsize*2", "{a}[0]", "(",
)
floats = st.sampled_from([0.1, 0.1, 1, -1, math.inf, math.nan, "x", True])
kernels = st.sampled_from(
    ["sleep", "sleep", "sleep", "fuzzmod_kb:make", "gemm", "collective", "nope", "nomod_kb:f"]
)
optional = {
    "dtypes": st.lists(st.sampled_from(["fp32", "bf16", "fp32", "fp99"]), max_size=2),
    "zip": st.lists(st.lists(names, min_size=2, max_size=3), max_size=1),
    "exclude": st.lists(st.dictionaries(names, scalars, max_size=2), max_size=2),
    "timer": st.dictionaries(
        st.sampled_from(["budget_s", "warmup_s", "cell_timeout_s", "min_samples"]),
        floats,
        max_size=2,
    ),
    "rounds": st.sampled_from([1, 2, 3, 0, 101, True, "2"]),
    "hardware": st.sampled_from(["cpu-generic", "no-such-profile"]),
}


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": draw(st.sampled_from(["fz"] * 9 + ["Bad Name"])),
        "description": "d",
        "kernel": draw(kernels),
        "axes": draw(st.dictionaries(names, axis_values, max_size=4)),
        "variants": draw(st.dictionaries(
            st.sampled_from(["v", "w", "v", "w", "bad name"]),
            st.dictionaries(names, scalars, max_size=2),
            min_size=1,
            max_size=2,
        )),
    }
    known = sorted({*document["axes"], *(o for v in document["variants"].values() for o in v)})
    parameters = st.sampled_from(known or ["work_us"])
    metric = st.builds(
        lambda template, a, b: template.format(a=a, b=b),
        st.sampled_from(METRICS), parameters, parameters,
    )
    document["metrics"] = draw(
        st.dictionaries(st.sampled_from(["flops", "bytes"]), metric, max_size=2)
    )
    for key, values in optional.items():
        if draw(st.booleans()):
            document[key] = draw(values)
    return document

def check(args: list[str]) -> int:
    with time_limit(SECONDS_PER_COMMAND):
        result = runner.invoke(cli.app, args)
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception)
    )
    assert "Traceback" not in result.output
    assert all(len(line) < 2000 for line in result.stderr.splitlines())
    return result.exit_code


def metrics_compute_on_every_cell(path: Path) -> None:
    """What `validate` passed cannot fail once measured: every metric on every cell."""
    bench = load_bench(path)
    for cell in plan(bench, "cpu")[:CELLS_MEASURED]:
        metrics, _ = cell_metrics(bench, cell.params, 1e-3, None)
        assert all(math.isfinite(value) for value in metrics.values()), metrics
        namespace = derived_names(dict(cell.params))
        applicable = {
            name for name, text in bench.metrics.items()
            if expr.parse(text).names <= namespace.keys()
        }
        assert applicable <= metrics.keys(), f"{cell.id}: dropped {applicable - metrics.keys()}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz")
    (path / "fuzzmod_kb.py").write_text("def make(work_us, device='cpu'):\n    return 1\n")
    return path


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(documents())
def test_random_benches_through_validate_and_plan(folder: Path, document: dict[str, Any]) -> None:
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    validated = check(["validate", str(path)])
    planned = check(["plan", "--bench", str(path), "--device", "cpu"])
    if validated == EXIT_OK:
        assert planned == EXIT_OK
        metrics_compute_on_every_cell(path)
