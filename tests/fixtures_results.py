"""Synthetic, realistic `Results` for tests of anything downstream of a run.

`make_gemm_results()` gives an H200-like GEMM sweep: shapes from under-tile to large,
two dtypes, a resident, a Triton and two staged variants (with per-stage times), one
failed and one invalid cell. Times come from a simple roofline with an efficiency that
grows with the shape, and every metric is filled the way the metrics layer fills it, so
tests can recompute what a figure should show from the cells alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernbench.dtypes import ITEMSIZE
from kernbench.plan import cell_id
from kernbench.results.model import CellResult, Results, RoundResult, Summary
from kernbench.spec.models import Bench, HardwareProfile

SHAPES: tuple[tuple[int, int, int], ...] = (
    (64, 64, 64),
    (1024, 1024, 1024),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
)
DTYPES = ("bf16", "fp16")
TILE = [128, 128, 64]
VARIANTS: dict[str, dict[str, Any]] = {
    "resident": {"backend": "torch", "staging": "resident"},
    "triton": {"backend": "triton", "staging": "resident", "autotune": True},
    "staged_pinned": {"backend": "torch", "staging": "staged", "host": "pinned"},
    "staged_pageable": {"backend": "torch", "staging": "staged", "host": "pageable"},
}
# Link efficiency of the host copies, by how the host buffer is allocated.
HOST_EFFICIENCY = {"pinned": 0.9, "pageable": 0.45}
FAILED = ("triton", (8192, 8192, 8192), "fp16", "CUDA out of memory (tried to allocate 1 GiB)")
INVALID = ("triton", (1024, 1024, 1024), "bf16", "throughput above the model ceiling")


def h200_profile() -> dict[str, Any]:
    profile = HardwareProfile.model_validate(
        {
            "name": "h200-sxm",
            "description": "NVIDIA H200 SXM, dense datasheet rates",
            "kind": "cuda",
            "match": ["H200"],
            "peak_tflops": {
                "bf16": {"datasheet": 989.4},
                "fp16": {"datasheet": 989.4, "measured": 900.0},
                "fp32": {"datasheet": 66.9},
            },
            "memory_gbs": {"datasheet": 4800.0, "measured": 4230.0},
            "host_to_device_gbs": {"datasheet": 64.0, "measured": 55.0},
            "device_to_host_gbs": {"datasheet": 64.0, "measured": 53.0},
        }
    )
    return profile.model_dump(mode="json")


def make_gemm_results(
    shapes: Sequence[tuple[int, int, int]] = SHAPES,
    dtypes: Sequence[str] = DTYPES,
    variants: Sequence[str] = tuple(VARIANTS),
    failed: bool = True,
    hardware: bool = True,
    rounds: int = 3,
) -> Results:
    spec = Bench.model_validate(
        {
            "name": "milestone-1h-gemm",
            "description": "GEMM over shapes, dtypes and operand staging",
            "kernel": "gemm",
            "axes": {
                "shape": [{"M": m, "N": n, "K": k} for m, n, k in shapes],
                "dtype": list(dtypes),
            },
            "variants": {name: VARIANTS[name] for name in variants},
            "metrics": {"flops": "2*M*N*K", "bytes": "(M*K + K*N + M*N) * itemsize"},
            "rounds": rounds,
            "model": "roofline",
            "figures": ["throughput", "utilization", "theory_vs_measured", "stage_breakdown"],
        }
    ).model_dump(mode="json")
    profile = HardwareProfile.model_validate(h200_profile())
    cells = []
    for variant in variants:
        for shape in shapes:
            for dtype in dtypes:
                cells.append(
                    _cell(len(cells), variant, shape, dtype, profile, rounds, failed, hardware)
                )
    return Results(
        bench=spec["name"],
        description=spec["description"],
        spec_hash="3f9a1c77e0b24d51a8c6",
        spec=spec,
        created_utc="2026-11-20T09:30:12Z",
        finished_utc="2026-11-20T09:41:55Z",
        complete=True,
        device="cuda",
        rounds=rounds,
        provenance={
            "device_name": "NVIDIA H200",
            "host": "gpu-node-07",
            "kernbench": "0.1.0",
            "git": {"commit": "46c26f4c1d0e9b2a", "dirty": False},
        },
        hardware=profile.model_dump(mode="json") if hardware else None,
        cells=cells,
    )


def _cell(
    index: int,
    variant: str,
    shape: tuple[int, int, int],
    dtype: str,
    profile: HardwareProfile,
    rounds: int,
    failed: bool,
    hardware: bool,
) -> CellResult:
    M, N, K = shape
    axes = {"shape": {"M": M, "N": N, "K": K}, "dtype": dtype}
    params = {"M": M, "N": N, "K": K, "dtype": dtype, "device": "cuda", **VARIANTS[variant]}
    common: dict[str, Any] = {
        "id": cell_id(variant, axes),
        "index": index,
        "variant": variant,
        "axes": axes,
        "params": params,
        "tile": TILE,
        "under_tile": M < TILE[0] or N < TILE[1] or K < TILE[2],
    }
    broken = {FAILED[:3]: ("failed", FAILED[3]), INVALID[:3]: ("invalid", INVALID[3])}
    if failed and (variant, shape, dtype) in broken:
        status, reason = broken[(variant, shape, dtype)]
        return CellResult(status=status, reason=reason, **common)

    itemsize = ITEMSIZE[dtype]
    flops = 2.0 * M * N * K
    nbytes = float((M * K + K * N + M * N) * itemsize)
    peak = profile.peak(dtype) or 1.0
    compute_s = flops / (peak * 1e12)
    memory_s = nbytes / (profile.memory_gbs.value * 1e9)
    model_s = max(compute_s, memory_s)
    efficiency = 0.85 * M * N * K / (M * N * K + 512**3) + 0.02
    if variant == "triton":
        efficiency *= 0.93
    gemm_s = model_s / efficiency
    stages: dict[str, float] = {}
    median = gemm_s
    if params["staging"] == "staged":
        link = HOST_EFFICIENCY[params["host"]]
        assert profile.host_to_device_gbs and profile.device_to_host_gbs
        in_bytes = float((M * K + K * N) * itemsize)
        out_bytes = float(M * N * itemsize)
        stages = {
            "h2d": in_bytes / (profile.host_to_device_gbs.value * 1e9 * link),
            "gemm": gemm_s,
            "d2h": out_bytes / (profile.device_to_host_gbs.value * 1e9 * link),
        }
        model_s += in_bytes / (profile.host_to_device_gbs.value * 1e9)
        model_s += out_bytes / (profile.device_to_host_gbs.value * 1e9)
        median = sum(stages.values()) * 1.01
    metrics = {
        "flops": flops,
        "bytes": nbytes,
        "tflops": flops / median / 1e12,
        "gbs": nbytes / median / 1e9,
        "intensity": flops / nbytes,
    }
    if hardware:
        metrics.update(
            util=metrics["tflops"] / peak, model_time_s=model_s, model_util=compute_s / model_s
        )
    round_medians = [median * (1.0 + 0.004 * (r - rounds // 2)) for r in range(rounds)]
    return CellResult(
        status="ok",
        rounds=[
            RoundResult(round=r + 1, status="ok", median_s=m, samples_s=[m * 0.998, m, m * 1.003])
            for r, m in enumerate(round_medians)
        ],
        summary=summary(median, round_medians, 3 * rounds),
        metrics=metrics,
        stages_s=stages,
        **common,
    )


def summary(median: float, round_medians: list[float], n: int) -> Summary:
    return Summary(
        n=n,
        median_s=median,
        mean_s=median * 1.001,
        min_s=median * 0.99,
        max_s=median * 1.02,
        q1_s=median * 0.997,
        q3_s=median * 1.004,
        iqr_s=median * 0.007,
        rel_iqr=0.007,
        ci_low_s=median * 0.995,
        ci_high_s=median * 1.006,
        ci_coverage=0.96,
        round_medians_s=round_medians,
    )
