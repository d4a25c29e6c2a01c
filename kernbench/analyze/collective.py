"""The collective model: algorithm and bus bandwidth, and the α-β (latency-bandwidth) fit.

Sizes follow nccl-tests: S counts every rank's data for allgather, reduce-scatter and
all-to-all. algbw = S / t; busbw = algbw × a factor that makes the figure comparable
with the link bandwidth on a flat topology (allreduce moves 2(n−1)/n of S over each
rank's link). busbw is a normalization, not a measured rate; report algbw beside it.
GB = 1e9 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernbench.analyze.rates import GB, per_second
from kernbench.spec.checks import world_size_of

BUSBW_FACTOR: dict[str, Callable[[int], float]] = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}


def busbw_factor(op: str, world_size: int) -> float:
    if op not in BUSBW_FACTOR:
        raise ValueError(f"unknown collective {op!r}; known: {', '.join(BUSBW_FACTOR)}")
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, not {world_size}")
    return BUSBW_FACTOR[op](world_size)


def bandwidths(op: str, bytes: float, world_size: int, time_s: float) -> dict[str, float]:
    """`{"algbw_gbs": S/t, "busbw_gbs": S/t × factor}` in GB/s (1e9 bytes per second)."""
    factor = busbw_factor(op, world_size)
    algbw = per_second(bytes, time_s, GB) if time_s > 0 else math.inf
    return {"algbw_gbs": algbw, "busbw_gbs": algbw * factor}


@dataclass(frozen=True)
class AlphaBeta:
    """t(S) = α + S/β: a fixed cost per call and a bandwidth (β may be inf: no slope)."""

    alpha_s: float
    beta_bytes_per_s: float
    r2: float  # of log t against log t(S): the fit as the log-log figure shows it


# Sizes at each end of a series that fix α (the smallest) and β (the largest).
END_SIZES = 3


def fit_alpha_beta(sizes_bytes: Sequence[float], times_s: Sequence[float]) -> AlphaBeta:
    """The line t = α + S/β through the two ends of a series (ADR 0047).

    Each end is the median size and median time of its END_SIZES sizes (fewer when the
    series has under twice as many): the smallest messages fix α, the largest β, so α
    reads as the small-message time and β as the bandwidth the largest messages reach.
    One line cannot follow NCCL's curve between them (flat to ~512 KiB, then protocol
    changes); a least-squares line over all sizes put α 10-15% above the 1 KiB times and
    β ~20% under the 1 GiB bandwidth on 2 H200s (ADR 0040's fit). α ≥ 0, 1/β ≥ 0.
    """
    sizes = np.asarray(sizes_bytes, dtype=float)
    times = np.asarray(times_s, dtype=float)
    if sizes.shape != times.shape or sizes.ndim != 1:
        raise ValueError("sizes and times must be equal-length sequences")
    if np.any(times <= 0) or np.any(sizes < 0) or not np.all(np.isfinite(times)):
        raise ValueError("times must be positive and finite, sizes non-negative")
    distinct = np.unique(sizes)
    if len(distinct) < 2:
        raise ValueError("an α-β fit needs at least two different sizes")
    per_end = max(1, min(END_SIZES, len(distinct) // 2))
    small = sizes <= distinct[per_end - 1]
    large = sizes >= distinct[-per_end]
    (s_small, t_small), (s_large, t_large) = (
        (float(np.median(sizes[end])), float(np.median(times[end]))) for end in (small, large)
    )
    inverse_beta = max((t_large - t_small) / (s_large - s_small), 0.0)
    fit = AlphaBeta(
        alpha_s=max(t_small - s_small * inverse_beta, 0.0),
        beta_bytes_per_s=float(1.0 / inverse_beta) if inverse_beta > 0 else math.inf,
        r2=math.nan,
    )
    return AlphaBeta(fit.alpha_s, fit.beta_bytes_per_s, _log_r2(times, model_time(fit, sizes)))


SeriesKey = tuple[str, int, str, bool]  # op, world size, dtype, in-place


def names_collective(params: Mapping[str, Any]) -> bool:
    """The cell's `op` names a collective: with the bench's `bytes` metric, enough for its
    algbw/busbw, whatever its size axis is called. Another bench may have an `op` axis of
    its own (ops-norm's softmax)."""
    return params.get("op") in BUSBW_FACTOR


def is_collective_cell(params: Mapping[str, Any]) -> bool:
    """A point of a collective series (fits, figures): it names a collective and has a
    message size, the parameter `bytes` the series are drawn and fitted over."""
    return names_collective(params) and "bytes" in params


def series_key(params: Mapping[str, Any]) -> SeriesKey:
    """The series a collective cell belongs to: one line per op, world size, dtype and
    in-place flag in the figures, one α-β fit each."""
    return (
        str(params["op"]),
        world_size_of(params),
        str(params.get("dtype", "-")),
        bool(params.get("inplace", True)),
    )


def series_label(key: SeriesKey) -> str:
    """'n=2 bf16 in-place': the series within its op's panel."""
    _, world_size, dtype, inplace = key
    return f"n={world_size} {dtype} {'in-place' if inplace else 'out-of-place'}"


def series_name(key: SeriesKey) -> str:
    """'allreduce n=2 bf16 in-place': the series among all of a sweep's."""
    return f"{key[0]} {series_label(key)}"


def fit_series(points: Iterable[tuple[Mapping[str, Any], float]]) -> dict[str, AlphaBeta]:
    """The α-β fit of each series, by `series_name`, from (cell params, median time).

    Each series is fitted in order of size, as the figures draw it (a stable sort, so
    the floats are the same wherever it is fitted); a series with fewer than two sizes,
    or times the fit refuses, has none."""
    series: dict[SeriesKey, list[tuple[float, float]]] = {}
    for params, median_s in points:
        series.setdefault(series_key(params), []).append((float(params["bytes"]), median_s))
    fits = {}
    for key, measured in series.items():
        measured.sort(key=lambda point: point[0])
        sizes = [size for size, _ in measured]
        times = [time for _, time in measured]
        try:
            fits[series_name(key)] = fit_alpha_beta(sizes, times)
        except ValueError:
            continue
    return fits


def model_time(fit: AlphaBeta, size_bytes: Any) -> Any:
    """α + S/β for a size or an array of sizes."""
    return fit.alpha_s + np.asarray(size_bytes, dtype=float) / fit.beta_bytes_per_s


def _log_r2(measured: np.ndarray, modeled: np.ndarray) -> float:
    if np.any(modeled <= 0):
        return math.nan
    observed, predicted = np.log(measured), np.log(modeled)
    spread = float(np.sum((observed - observed.mean()) ** 2))
    residual = float(np.sum((observed - predicted) ** 2))
    return 1.0 - residual / spread if spread > 0 else math.nan
