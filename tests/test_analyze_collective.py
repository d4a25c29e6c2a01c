from __future__ import annotations

import math

import numpy as np
import pytest
from fixtures_results import make_gemm_results

from kernbench.analyze.collective import (
    BUSBW_FACTOR,
    AlphaBeta,
    bandwidths,
    busbw_factor,
    fit_alpha_beta,
    fit_series,
    is_collective_cell,
    model_time,
    series_key,
    series_name,
)
from kernbench.analyze.metrics import cell_metrics
from kernbench.results.model import collective_fits
from kernbench.spec.models import Bench

SIZES = 2.0 ** np.arange(10, 31)  # 1 KiB .. 1 GiB


def test_busbw_factors_follow_nccl_tests() -> None:
    assert busbw_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    assert busbw_factor("allgather", 4) == pytest.approx(3 / 4)
    assert busbw_factor("reduce_scatter", 2) == pytest.approx(1 / 2)
    assert busbw_factor("alltoall", 8) == pytest.approx(7 / 8)
    assert {busbw_factor(op, 8) for op in ("broadcast", "reduce", "sendrecv")} == {1.0}
    assert set(BUSBW_FACTOR) == {
        "allreduce",
        "allgather",
        "reduce_scatter",
        "alltoall",
        "broadcast",
        "reduce",
        "sendrecv",
    }


def test_bandwidths_in_gb_per_s() -> None:
    rates = bandwidths("allreduce", 1e9, 2, 0.01)
    assert rates == {"algbw_gbs": pytest.approx(100.0), "busbw_gbs": pytest.approx(100.0)}
    rates = bandwidths("allreduce", 1e9, 4, 0.01)
    assert rates["busbw_gbs"] == pytest.approx(150.0)


def test_unknown_collective_lists_the_known() -> None:
    with pytest.raises(ValueError, match="unknown collective 'allgatherv'; known: allreduce"):
        bandwidths("allgatherv", 1024, 2, 1e-5)


def test_fit_recovers_alpha_and_beta_from_exact_points() -> None:
    fit = fit_alpha_beta(SIZES, 25e-6 + SIZES / 330e9)
    assert fit.alpha_s == pytest.approx(25e-6, rel=1e-9)
    assert fit.beta_bytes_per_s == pytest.approx(330e9, rel=1e-9)
    assert fit.r2 == pytest.approx(1.0)


def test_fit_with_noise_keeps_both_ends() -> None:
    rng = np.random.default_rng(7)
    times = (8e-6 + SIZES / 50e9) * (1 + 0.03 * rng.standard_normal(len(SIZES)))
    fit = fit_alpha_beta(SIZES, times)
    # Relative weighting: the microsecond end fixes alpha, the GiB end fixes beta.
    assert fit.alpha_s == pytest.approx(8e-6, rel=0.05)
    assert fit.beta_bytes_per_s == pytest.approx(50e9, rel=0.05)
    assert 0.99 < fit.r2 <= 1.0


def test_fit_reads_alpha_at_the_small_end_and_beta_at_the_large_end_of_a_bent_curve() -> None:
    # NCCL's shape: flat to 512 KiB, a protocol step, then a line to its bandwidth.
    sizes = np.array([2.0**p for p in range(10, 31)])
    times = np.where(sizes <= 2**19, 5e-6, 12e-6 + sizes / 400e9)
    fit = fit_alpha_beta(sizes, times)
    assert fit.alpha_s == pytest.approx(5e-6, rel=0.01)
    assert fit.beta_bytes_per_s == pytest.approx(400e9, rel=0.01)


def test_a_fit_of_few_sizes_draws_its_line_through_the_ends() -> None:
    fit = fit_alpha_beta([1e3, 1e6, 1e9], [2e-6, 50e-6, 2e-3])
    assert fit.alpha_s == pytest.approx(2e-6 - 1e3 * (2e-3 - 2e-6) / (1e9 - 1e3))
    assert fit.beta_bytes_per_s == pytest.approx((1e9 - 1e3) / (2e-3 - 2e-6))


def test_fit_without_slope_gives_infinite_beta() -> None:
    fit = fit_alpha_beta([1024, 2048, 4096], [1e-5, 1e-5, 1e-5])
    assert fit.alpha_s == pytest.approx(1e-5)
    assert math.isinf(fit.beta_bytes_per_s)
    assert model_time(fit, 1 << 20) == pytest.approx(1e-5)


def test_fit_needs_two_sizes_and_positive_times() -> None:
    with pytest.raises(ValueError, match="two different sizes"):
        fit_alpha_beta([1024, 1024], [1e-5, 2e-5])
    with pytest.raises(ValueError, match="positive"):
        fit_alpha_beta([1024, 2048], [1e-5, 0.0])


def test_model_time_takes_arrays() -> None:
    fit = AlphaBeta(alpha_s=1e-5, beta_bytes_per_s=1e9, r2=1.0)
    assert model_time(fit, [0, 1e9]).tolist() == pytest.approx([1e-5, 1.00001])


def test_series_are_op_world_size_dtype_and_in_place() -> None:
    key = series_key({"op": "allgather", "world_size": 4, "dtype": "fp32", "inplace": False})
    assert key == ("allgather", 4, "fp32", False)
    assert series_name(key) == "allgather n=4 fp32 out-of-place"
    assert series_name(series_key({"op": "allreduce"})) == "allreduce n=1 - in-place"


def test_fit_series_fits_each_series_in_size_order() -> None:
    def params(op: str, size: float, dtype: str = "bf16") -> dict[str, object]:
        return {"op": op, "world_size": 2, "dtype": dtype, "bytes": size}

    points = [(params("allreduce", s), 25e-6 + s / 330e9) for s in reversed(SIZES)]
    points += [(params("allreduce", 1024.0, "fp32"), 1e-5)]  # one size: no fit
    points += [(params("allgather", s), 0.0) for s in SIZES[:3]]  # refused: no fit
    fits = fit_series(points)
    assert list(fits) == ["allreduce n=2 bf16 in-place"]
    in_order = fit_alpha_beta(SIZES, 25e-6 + SIZES / 330e9)
    assert fits["allreduce n=2 bf16 in-place"] == in_order


def test_a_cell_is_a_collectives_by_its_op_and_message_size() -> None:
    assert is_collective_cell({"op": "allreduce", "bytes": 1024, "world_size": 2})
    assert not is_collective_cell({"op": "softmax", "rows": 1024, "hidden": 4096})
    assert not is_collective_cell({"op": "allreduce"})  # no size: no point on a series


def test_an_op_axis_of_another_bench_is_no_collective_series() -> None:
    # ops-norm's `op` axis (softmax, layer_norm, rms_norm) made the results' fit look for
    # a message size its cells do not have: the run ended in a KeyError, no results.
    results = make_gemm_results()
    for cell in results.cells:
        cell.params["op"] = "softmax"
    assert collective_fits(results.cells) == {}


def test_a_collective_bench_whose_size_axis_has_another_name_keeps_its_busbw() -> None:
    # algbw/busbw come from the bench's bytes metric and the op's name; a size axis not
    # called `bytes` lost them silently (no fit or figure needs to be drawn for them).
    bench = Bench.model_validate({
        "name": "n", "description": "d", "kernel": "sleep",
        "axes": {"op": ["allreduce"], "size": [4]}, "metrics": {"bytes": "size * 1024"}})
    cell = {"op": "allreduce", "size": 4, "world_size": 2}
    metrics, invalid = cell_metrics(bench, cell, 1e-6, None)
    assert invalid is None and metrics["gbs"] == pytest.approx(4.096)
    assert metrics["algbw_gbs"] == pytest.approx(4.096)
    assert metrics["busbw_gbs"] == pytest.approx(4.096)  # 2(n-1)/n = 1 for two ranks
    assert not is_collective_cell(cell)  # no point of a series: fits and figures need `bytes`
    softmax = {"op": "softmax", "size": 4}
    assert "busbw_gbs" not in cell_metrics(bench, softmax, 1e-6, None)[0]
