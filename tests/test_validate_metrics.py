"""Metrics evaluated on every cell and the hardware profile resolved at `validate` and
`plan` (before anything is measured), and metric values never dropped silently or stored
as inf at run time (issue 12, items 2 and 6)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.analyze.metrics import MetricError, cell_metrics, expression_metrics
from kernbench.errors import EXIT_OK, EXIT_USAGE
from kernbench.spec import hardware
from kernbench.spec.model_metrics import COMPUTED_METRICS
from kernbench.spec.models import Bench

runner = CliRunner()

BENCH = """\
name: m
description: d
kernel: sleep
axes:
  work_us: [50, 100]
variants:
  plain: {}
  chunked: {scale: 4}
metrics:
  flops: {metric}
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(folder: Path, metric: str, extra: str = "") -> str:
    (folder / "m.yaml").write_text(BENCH.replace("{metric}", metric) + extra)
    return "m.yaml"


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli.app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("work_us/0", "division by zero in 'work_us/0' (cell plain/work_us=50)"),
        ("min(work_us)", "'int' object is not iterable in 'min(work_us)' (cell plain/work_us=50)"),
        ("log2(work_us - 50)", "math domain error in 'log2(work_us - 50)' (cell plain/work_us=50)"),
        ("10**400", "exponent 400 exceeds 64 in '10**400' (cell plain/work_us=50)"),
        ("1e308*work_us", "overflow to inf in '1e308*work_us' (cell plain/work_us=50)"),
        ("work_us / (100 - work_us)",
         "division by zero in 'work_us / (100 - work_us)' (cell plain/work_us=100)"),
        ("work_us / (scale - 4)",
         "division by zero in 'work_us / (scale - 4)' (cell chunked/work_us=50)"),
        ("75 - work_us", "'75 - work_us' is -25: flops cannot be negative "
         "(cell plain/work_us=100)"),
    ],
)
def test_validate_and_plan_evaluate_every_metric_on_every_cell(
    here: Path, metric: str, message: str
) -> None:
    path = write(here, metric)
    expected = f"m.yaml:10: metrics.flops: {message}\n"
    assert invoke("validate", path) == (EXIT_USAGE, "", expected)
    assert invoke("plan", "--bench", path, "--device", "cpu") == (EXIT_USAGE, "", expected)


def test_a_metric_of_a_variant_only_option_skips_the_other_variants(here: Path) -> None:
    code, out, err = invoke("validate", write(here, "work_us * scale"))
    assert (code, out, err) == (EXIT_OK, "ok m.yaml\n", "")


def test_validate_of_every_bench_checks_metrics_too(here: Path) -> None:
    (here / "benches").mkdir()
    (here / "pyproject.toml").write_text('[project]\nname = "kernbench"\n')
    (here / "benches" / "m.yaml").write_text(BENCH.replace("{metric}", "work_us/0"))
    code, _, err = invoke("validate")
    assert code == EXIT_USAGE
    assert err.splitlines()[0] == (
        "benches/m.yaml:10: metrics.flops: division by zero in 'work_us/0' "
        "(cell plain/work_us=50)"
    )


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("work_us: [50, 100]", "device: [50, 100]",  # the fuzzer's find
         "5: axes.device: 'device' is set by the run (--device); an axis cannot"),
        ("work_us: [50, 100]", "shape: [{work_us: 50, variant: 1}]",
         "5: axes.shape: 'variant' names the cell's variant; an axis cannot"),
        ("chunked: {scale: 4}", "chunked: {scale: 4, variant: 1}",
         "8: variants.chunked.variant: 'variant' names the cell's variant; a variant cannot"),
    ],
)
def test_a_parameter_named_as_one_kernbench_sets_is_a_line_error(
    here: Path, old: str, new: str, where: str
) -> None:
    # A `device` axis validated, then became `cpu` in every cell of the plan.
    (here / "m.yaml").write_text(BENCH.replace("{metric}", "'2'").replace(old, new))
    code, _, err = invoke("validate", "m.yaml")
    assert code == EXIT_USAGE and err.startswith(f"m.yaml:{where}") and err.count("\n") == 1
    assert invoke("plan", "--bench", "m.yaml", "--device", "cpu")[2] == err


def test_an_unknown_hardware_profile_is_a_line_error(here: Path) -> None:
    path = write(here, "work_us", "hardware: no-such-profile\n")
    code, _, err = invoke("validate", path)
    assert code == EXIT_USAGE
    assert err.startswith(
        "m.yaml:11: hardware: unknown hardware profile 'no-such-profile'; known: "
    )
    assert "cpu-generic" in err and err.count("\n") == 1
    assert invoke("plan", "--bench", path, "--device", "cpu")[2] == err


def test_a_known_hardware_profile_passes(here: Path) -> None:
    path = write(here, "work_us", "hardware: cpu-generic\n")
    assert invoke("validate", path) == (EXIT_OK, "ok m.yaml\n", "")


def spec(**metrics: str) -> Bench:
    return Bench.model_validate(
        {"name": "b", "description": "d", "kernel": "sleep", "metrics": metrics}
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("work_us/0", "division by zero in 'work_us/0'"),
        ("log2(work_us - 50)", "math domain error in 'log2(work_us - 50)'"),
        ("10**400", "exponent 400 exceeds 64 in '10**400'"),
        ("1e308*10", "overflow to inf in '1e308*10'"),
        ("min(work_us)", "'int' object is not iterable in 'min(work_us)'"),
    ],
)
def test_a_metric_that_cannot_be_computed_raises_at_run_time(text: str, why: str) -> None:
    with pytest.raises(MetricError) as info:
        cell_metrics(spec(flops=text), {"work_us": 50}, 1e-3, None)
    assert (info.value.name, str(info.value)) == ("flops", why)


def test_a_metric_missing_a_parameter_does_not_apply_to_the_cell() -> None:
    assert expression_metrics(spec(flops="work_us * scale"), {"work_us": 50}) == {}


def test_no_derived_rate_is_stored_as_inf() -> None:
    with pytest.raises(MetricError) as info:
        cell_metrics(spec(flops="1e300"), {}, 1e-12, None)
    assert str(info.value) == "tflops is inf at a median of 1e-12 s"
    metrics, invalid = cell_metrics(spec(flops="2*work_us"), {"work_us": 50}, 1e-3, None)
    assert invalid is None and all(math.isfinite(v) for v in metrics.values())
    assert metrics["flops"] == 100.0


def test_a_negative_count_of_work_fails_at_run_time_too() -> None:
    with pytest.raises(MetricError) as info:
        cell_metrics(spec(bytes="-work_us"), {"work_us": 50}, 1e-3, None)
    assert str(info.value) == "'-work_us' is -50: bytes cannot be negative"


ROOFLINE = """\
name: r
description: d
kernel: gemm
axes:
  shape: [{M: 64, N: 64, K: 64}]
dtypes: [fp32]
model: roofline
"""


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ("metrics: {flop: 2*M*N*K, byte: M*N*itemsize}",
         "8: metrics: model roofline needs a flops or bytes metric and the bench defines none; "
         "did you mean 'flops' for 'flop', 'bytes' for 'byte'?"),
        ("metrics: {work: 2*M*N*K}",
         "8: metrics: model roofline needs a flops or bytes metric and the bench defines none"),
        ("metrics:\n  flops: 2*M*N*K\n  byte: M*N*itemsize",
         "10: metrics.byte: model roofline reads 'bytes', not 'byte': did you mean 'bytes'?"),
        ("", "1: metrics: model roofline needs a flops or bytes metric and the bench defines "
         "none"),
    ],
)
def test_a_roofline_without_its_metrics_is_refused(
    here: Path, metrics: str, message: str
) -> None:
    (here / "r.yaml").write_text(ROOFLINE + metrics + "\n")
    assert invoke("validate", "r.yaml") == (EXIT_USAGE, "", f"r.yaml:{message}\n")


@pytest.mark.parametrize("metrics", ["{flops: 2*M*N*K}", "{bytes: M*N*itemsize, elements: M*N}"])
def test_a_roofline_with_flops_or_bytes_passes(here: Path, metrics: str) -> None:
    (here / "r.yaml").write_text(ROOFLINE + f"metrics: {metrics}\n")
    assert invoke("validate", "r.yaml") == (EXIT_OK, "ok r.yaml\n", "")


@pytest.mark.parametrize("name", ["time_s", "tflops", "gbs"])
def test_a_metric_named_as_one_kernbench_computes_is_refused(here: Path, name: str) -> None:
    """The computed one replaced it in the results without a word."""
    (here / "r.yaml").write_text(ROOFLINE + f"metrics: {{flops: 2*M*N*K, bytes: M, {name}: M}}\n")
    assert invoke("validate", "r.yaml") == (EXIT_USAGE, "", (
        f"r.yaml:8: metrics.{name}: {name!r} is a metric kernbench computes (time_s, tflops, "
        "gbs, intensity, util, model_time_s, model_util, algbw_gbs, busbw_gbs), which would "
        "replace this one; name it otherwise\n"))


@pytest.mark.parametrize(("name", "source"), [("gbs", "bytes"), ("tflops", "flops")])
def test_a_rate_named_in_place_of_its_source_says_which_metric_to_give(
    here: Path, name: str, source: str
) -> None:
    # A new user writes `gbs: 2*M*N*itemsize` for the bytes it moves: say so.
    (here / "r.yaml").write_text(ROOFLINE + f"metrics: {{{name}: M*N}}\n")
    code, out, err = invoke("validate", "r.yaml")
    assert (code, out) == (EXIT_USAGE, "")
    assert err.startswith(f"r.yaml:8: metrics.{name}: {name!r} is a metric kernbench computes")
    assert err.endswith(f"; give the {source} of one call as `{source}:` and kernbench "
                        f"computes {name}, or name it otherwise\n")


def test_every_metric_kernbench_computes_is_one_a_bench_may_not_name() -> None:
    bench = spec(flops="work_us", bytes="work_us").model_copy(update={"model": "roofline"})
    profile = hardware.named_profile("h200")
    params = {"work_us": 50, "op": "allreduce", "bytes": 50, "dtype": "bf16"}
    metrics, _ = cell_metrics(bench, params, 1.0, profile)
    assert set(metrics) - set(bench.metrics) == set(COMPUTED_METRICS)


def test_a_constant_metric_may_be_written_as_a_number(here: Path) -> None:
    """YAML reads `bytes: 4096` as a number: it was refused as "a valid string"."""
    (here / "r.yaml").write_text(ROOFLINE + "metrics: {flops: 2*M*N*K, bytes: 4096, x: 1.5e3}\n")
    assert invoke("validate", "r.yaml") == (EXIT_OK, "ok r.yaml\n", "")
    bench = Bench.model_validate({"name": "b", "description": "d", "kernel": "sleep",
                                  "metrics": {"bytes": 4096, "x": 1.5e3}})
    assert bench.metrics == {"bytes": "4096", "x": "1500.0"}
    (here / "r.yaml").write_text(ROOFLINE + "metrics: {flops: true}\n")
    assert invoke("validate", "r.yaml")[2] == (
        "r.yaml:8: metrics.flops: Input should be a valid string (got True)\n")
