"""The GEMM ceilings sampled as a sweep samples its cells: in rounds, each in turns.

A ceiling read one shape at a time, each for seconds behind a long warm-up, is a hotter
card than a sweep's cells ever meet: the shape calibration ran read 2.4-2.8% faster in
the sweep that followed (docs/gpu-runs.md, ADR 0049). So every candidate is held at once
and each round visits them all in a shuffled order, `turns` times, each visit with a
turn's share of the timer (spec.timer_model.turn_spec), exactly as a round of a bench in
turns. A candidate's rate in a round is its work over the median of that round's samples;
its ceiling is the best of its rounds, as a ceiling is the best rate seen.

The rounds rate any candidate by its `work`: a GEMM's FLOPs, a copy's bytes moved
(`calibrate_memory.CopyMethod`), in the `unit` the caller stores (TFLOP/s, GB/s).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from kernbench.analyze.rates import per_second
from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec, turn_spec


@dataclass(frozen=True)
class Candidate:
    """One GEMM a ceiling may come from."""

    dtype: str
    m: int
    n: int
    k: int

    @property
    def work(self) -> float:
        """FLOPs of one call."""
        return 2.0 * self.m * self.n * self.k


class Rated(Hashable, Protocol):
    """Anything the rounds sample: its rate is its `work` of one call over the seconds."""

    @property
    def work(self) -> float: ...


R = TypeVar("R", bound=Rated)
Samples = Callable[[Kernel, TimerSpec], Sequence[float]]


def best_rates(
    candidates: Sequence[tuple[R, Kernel]],
    samples_of: Samples,
    spec: TimerSpec,
    rounds: int,
    rng: random.Random,
    unit: float,
) -> dict[R, list[float]]:
    """Each candidate's rate (its work per second, in `unit`s) in every round, rounds in
    the order run."""
    visit = turn_spec(spec, spec.turns) if spec.turns > 1 else spec
    rates: dict[R, list[float]] = {candidate: [] for candidate, _ in candidates}
    for _ in range(rounds):
        order = list(candidates)
        rng.shuffle(order)
        taken: dict[R, list[float]] = {candidate: [] for candidate, _ in order}
        for _turn in range(spec.turns):
            for candidate, kernel in order:
                taken[candidate].extend(samples_of(kernel, visit))
        for candidate, samples in taken.items():
            rates[candidate].append(per_second(candidate.work, statistics.median(samples), unit))
    return rates


def peaks_by_dtype(rates: dict[Candidate, list[float]]) -> dict[str, float]:
    """Per dtype, the best round of its best candidate (rates as `best_rates` gave them)."""
    peaks: dict[str, float] = {}
    for candidate, per_round in rates.items():
        if per_round:
            peaks[candidate.dtype] = max(peaks.get(candidate.dtype, 0.0), max(per_round))
    return peaks
