"""The figure registry: each figure fits some benches, and `validate` refuses one that
does not fit the bench's model and cells, as one `PATH:LINE: figures.i:` line."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke, nap_bench

from kernbench.errors import EXIT_OK, EXIT_USAGE
from kernbench.spec.figures import FIGURE_NAMES, BenchFacts, misfit, renderer_for

GEMM = "gemm"


def facts(kernel: str = "sleep", model: str = "none", metrics=(), params=("work_us",)):
    return BenchFacts(kernel, model, frozenset(metrics), frozenset(params))


def test_facts_keep_the_parameters_every_cell_has() -> None:
    got = BenchFacts.of("k", "none", {"bytes": "8*n"}, [{"n": 1, "a": 2}, {"n": 2}])
    assert got == BenchFacts("k", "none", frozenset({"bytes"}), frozenset({"n"}))


def test_throughput_is_the_gemm_figure_on_gemm_cells_and_the_generic_one_elsewhere() -> None:
    assert renderer_for("throughput", facts(params=("M", "N", "K"))) == GEMM
    assert renderer_for("throughput", facts(metrics=("flops",))) == "generic"
    # Results never checked (written before figures were) are drawn as they always were.
    assert renderer_for("throughput", facts()) == GEMM


@pytest.mark.parametrize(
    ("name", "bench", "why"),
    [
        (
            "utilization",
            facts(),
            "needs cells with M, N, K (a GEMM shape); this bench has cells without M, N, K",
        ),
        ("stage_breakdown", facts(params=("M", "N")), "this bench has cells without K"),
        (
            "busbw",
            facts("gemm", "roofline", params=("M", "N", "K")),
            "needs a collective "
            "bench (kernel: collective or model: alpha_beta) whose cells have op and bytes; this "
            "bench has kernel 'gemm' and model 'roofline'",
        ),
        ("latency", facts("collective", params=("op",)), "this bench has cells without bytes"),
        (
            "throughput",
            facts(),
            "needs cells with M, N, K (a GEMM shape) or a flops or bytes metric, or a count "
            "under rates; this bench has cells without M, N, K and declares no flops or bytes "
            "metric and lists no count under rates",
        ),
        ("bandwidth", facts(metrics=("flops",)), "this bench declares no bytes metric"),
        (
            "bandwidth",
            facts("collective", "alpha_beta", ("bytes",), ("op", "bytes")),
            "this bench is a collective, whose bytes cross the interconnect (busbw draws them)",
        ),
    ],
)
def test_a_figure_that_does_not_fit_says_what_it_needs(name, bench, why) -> None:
    assert why in (misfit(name, bench) or "")


def test_throughput_fits_a_bench_whose_only_rate_is_a_count_it_lists() -> None:
    counted = BenchFacts.of("sleep", "none", {"elements": "n"}, [{"n": 1}], rates=["elements"])
    assert misfit("throughput", counted) is None
    assert misfit("throughput", facts(metrics=("elements",))) is not None


def test_the_generic_figures_fit_a_bench_that_is_no_gemm() -> None:
    copy = facts("memcopy:make", metrics=("bytes",), params=("size", "dtype"))
    assert [name for name in FIGURE_NAMES if misfit(name, copy) is None] == [
        "throughput",
        "time",
        "bandwidth",
    ]
    assert misfit("time", facts()) is None


def test_validate_refuses_a_gemm_figure_of_a_busy_wait(tmp_path: Path) -> None:
    bench = nap_bench(tmp_path, "figures: [time, utilization]\n")
    code, out, err = invoke("validate", str(bench))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"{bench}:6: figures.1: figure 'utilization' needs cells with M, N, K (a GEMM shape); "
        "this bench has cells without M, N, K\n"
    )


def test_validate_refuses_a_collective_figure_of_a_gemm(tmp_path: Path) -> None:
    bench = tmp_path / "mm.yaml"
    bench.write_text(
        "name: mm\ndescription: square products\nkernel: gemm\n"
        "axes:\n  shape: [{M: 64, N: 64, K: 64}]\ndtypes: [fp32]\n"
        "metrics: {flops: 2*M*N*K}\nmodel: roofline\n"
        "figures:\n  - throughput\n  - busbw\n"
    )
    code, _, err = invoke("validate", str(bench))
    assert code == EXIT_USAGE
    assert err.startswith(f"{bench}:11: figures.1: figure 'busbw' needs a collective bench ")
    assert err.endswith("this bench has kernel 'gemm' and model 'roofline'\n")


def test_plan_refuses_it_too_and_a_fitting_figure_passes(tmp_path: Path) -> None:
    bench = nap_bench(tmp_path, "figures: [bandwidth]\n")
    code, _, err = invoke("plan", "--bench", str(bench), "--device", "cpu")
    assert code == EXIT_USAGE and "figures.0: figure 'bandwidth' needs a bytes metric" in err
    bench = nap_bench(tmp_path, "metrics: {bytes: 64*work_us}\nfigures: [time, bandwidth]\n")
    assert invoke("validate", str(bench))[0] == EXIT_OK


def test_a_bench_with_no_cells_on_this_device_checks_its_figures_on_its_own_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ab-nccl-proto excludes the CPU: its busbw still fits the cells it has elsewhere.
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    code, _, err = invoke("plan", "--bench", "ab-nccl-proto", "--device", "cpu")
    assert (code, err) == (  # not a figure's error: the plan's, as a run's
        EXIT_USAGE, "benches/ab-nccl-proto.yaml:16: exclude: the plan for device cpu is empty: "
        "the exclusions drop every cell on cpu\n"
    )


ONE_SIZE_COLLECTIVE = """\
name: one-size
description: one message size
kernel: collective
axes: {op: [allreduce, allgather], world_size: [2]}
variants: {small: {bytes: 4096}}
"""


def test_a_collective_that_does_not_sweep_bytes_gets_a_note_from_each_command(
    tmp_path: Path,
) -> None:
    """It checks (its figure is the default `time`), but a user expecting the bus-bandwidth
    sweep of milestone-1h-ccl got none, and no word why."""
    bench = tmp_path / "one-size.yaml"
    bench.write_text(ONE_SIZE_COLLECTIVE)
    note = ("note: a collective without a `bytes` axis of two sizes or more: its results "
            "cannot be drawn as a bus-bandwidth sweep (figures busbw, latency); add one to "
            "draw them")
    code, out, _ = invoke("validate", str(bench))
    assert (code, out) == (EXIT_OK, f"ok {bench}\n{note.replace('note: ', f'note: {bench}: ')}\n")
    code, out, _ = invoke("plan", "--bench", str(bench), "--device", "cpu")
    assert code == EXIT_OK and note in out.splitlines()
    bench.write_text(ONE_SIZE_COLLECTIVE.replace(
        "world_size: [2]}", "world_size: [2], bytes: [1024, 2048]}").replace(
        "{small: {bytes: 4096}}", "{small: {}}"))
    code, out, _ = invoke("validate", str(bench))
    assert (code, out) == (EXIT_OK, f"ok {bench}\n")
