"""The GEMM ceilings: per dtype, the best rate of several shapes (CUDA: cuBLAS sampled in
rounds and turns, `calibrate_rounds`; CPU: numpy matmul)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial

import numpy as np

from kernbench.analyze.rates import TFLOP, per_second
from kernbench.execute.calibrate_rounds import Candidate, best_rates, peaks_by_dtype
from kernbench.execute.calibrate_setup import Part, Sampler, Sizes, median_seconds
from kernbench.kernels import gemm_cuda
from kernbench.kernels.base import Kernel
from kernbench.spec.fields import Scalar


@dataclass
class GemmCeilings(Part):
    peak_tflops: dict[str, float] | None = None


def gemm_candidates(n: int) -> list[tuple[int, int, int]]:
    """M, N, K of the GEMMs a ceiling is the best of.

    One shape alone can land on a weaker cuBLAS kernel (fp16 8192^3 read 670 TFLOP/s where
    8192x1024x8192 gave 763), the largest is where fp32 peaks (16384^3 read 104% of an
    8192^3 ceiling), and the LLM projections ran cuBLAS 2-4% above all four on an H200
    under the isolated duty: MLP up (M=2048, N=14336, K=4096 at n=8192) and MLP down
    (M=2048, N=4096, K=14336)."""
    return [(n, n, n), (n // 2, n // 2, n // 2), (n, n // 8, n), (2 * n, 2 * n, 2 * n),
            (n // 4, 7 * n // 4, n // 2), (n // 4, n // 2, 7 * n // 4)]


def gemm_ceilings_cuda(sizes: Sizes, sampler: Sampler) -> GemmCeilings:
    import torch

    spec = sizes.timer.model_copy(update={"l2": "cold"})
    n = sizes.gemm
    notes: dict[str, Scalar] = {"rounds": sizes.rounds, "turns": spec.turns}
    if spec.duty == "sustained":  # the settle phase each visit starts with (ADR 0053)
        notes["settle_min_s"] = spec.settle_min_s
    candidates: list[tuple[Candidate, Kernel]] = []
    for dtype in gemm_cuda.DTYPES:
        for m, k_n, k in gemm_candidates(n):
            try:
                kernel = gemm_cuda.make(M=m, N=k_n, K=k, dtype=dtype)
            except RuntimeError as exc:  # fp8 where the GPU or torch lacks it
                notes[f"{dtype}_skipped"] = str(exc)
                break
            candidates.append((Candidate(dtype, m, k_n, k), kernel))
    rates = best_rates(candidates, sampler.samples_of, spec, sizes.rounds,
                       random.Random(sizes.seed), TFLOP)
    del candidates
    torch.cuda.empty_cache()
    method = (
        f"cuBLAS GEMM per dtype, best of {n}^3, {n // 2}^3, {n}x{n // 8}x{n}, "
        f"{2 * n}^3, M={n // 4} N={7 * n // 4} K={n // 2} and M={n // 4} N={n // 2} "
        f"K={7 * n // 4} (fp8: torch._scaled_mm), random data, each the best of "
        f"{sizes.rounds} rounds in {spec.turns} turns (a round's median; warm-up "
        f"{spec.warmup_s:g} s, budget {spec.budget_s:g} s, at least {spec.min_time_s:g} s "
        f"a round)"
    )
    return GemmCeilings(method=method, notes=notes, peak_tflops=peaks_by_dtype(rates))


def gemm_ceilings_cpu(sizes: Sizes) -> GemmCeilings:
    rng = np.random.default_rng()
    n = sizes.cpu_gemm
    peaks = {}
    for dtype, np_dtype in (("fp32", np.float32), ("fp64", np.float64)):
        a = rng.standard_normal((n, n)).astype(np_dtype)
        b = rng.standard_normal((n, n)).astype(np_dtype)
        c = np.empty((n, n), dtype=np_dtype)
        seconds = median_seconds(partial(np.matmul, a, b, out=c), sizes.reps)
        peaks[dtype] = per_second(2.0 * n**3, seconds, TFLOP)
    return GemmCeilings(method=f"numpy matmul {n}^3", peak_tflops=peaks)
