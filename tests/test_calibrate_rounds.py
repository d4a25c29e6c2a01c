"""Ceilings in rounds and turns: every candidate visited in each turn of a round, in a
shuffled order; a round's rate from its median; the ceiling the best round."""

from __future__ import annotations

import random

from kernbench.execute.calibrate_rounds import Candidate, best_rates, peaks_by_dtype
from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec

SPEC = TimerSpec(warmup_s=0.04, budget_s=0.4, min_time_s=0.2, min_samples=8, turns=4)


def _kernel() -> Kernel:
    return Kernel(run=lambda: None, synchronize=lambda: None)


def test_each_round_visits_every_candidate_in_turns_with_a_turns_share() -> None:
    fast, slow = Candidate("bf16", 2, 2, 2), Candidate("bf16", 4, 4, 4)
    kernels = {fast: _kernel(), slow: _kernel()}
    visits: list[tuple[Candidate, TimerSpec]] = []
    by_kernel = {id(k): c for c, k in kernels.items()}

    def samples_of(kernel: Kernel, spec: TimerSpec) -> list[float]:
        visits.append((by_kernel[id(kernel)], spec))
        return [1.0, 2.0, 3.0]

    rates = best_rates(list(kernels.items()), samples_of, SPEC, rounds=2, rng=random.Random(1),
                       unit=4.0)
    assert len(visits) == 2 * 4 * 2  # rounds x turns x candidates
    assert {spec.budget_s for _, spec in visits} == {0.1}  # a turn's share
    assert {spec.warmup_s for _, spec in visits} == {0.01}
    for turn in range(0, len(visits), 2):  # each turn visits both, in the round's order
        assert {c for c, _ in visits[turn:turn + 2]} == {fast, slow}
    assert rates[fast] == [16 / 2.0 / 4.0] * 2 and rates[slow] == [128 / 2.0 / 4.0] * 2


def test_the_ceiling_is_the_best_round_of_the_best_candidate_per_dtype() -> None:
    a, b, c = Candidate("bf16", 1, 1, 1), Candidate("bf16", 2, 1, 1), Candidate("fp8", 1, 1, 1)
    rates = {a: [3.0, 5.0], b: [4.0, 4.5], c: [9.0], Candidate("fp32", 1, 1, 1): []}
    assert peaks_by_dtype(rates) == {"bf16": 5.0, "fp8": 9.0}


def test_a_round_is_its_median_not_the_best_sample() -> None:
    one = Candidate("fp16", 1, 1, 1)
    answers = iter([[1.0], [4.0], [4.0], [4.0]])  # a fast outlier in the first turn

    rates = best_rates([(one, _kernel())], lambda kernel, spec: next(answers), SPEC, 1,
                       random.Random(0), 1.0)
    assert rates[one] == [2.0 / 4.0]


def test_the_order_differs_between_rounds() -> None:
    candidates = [(Candidate("bf16", i, 1, 1), _kernel()) for i in range(1, 9)]
    orders: list[list[int]] = []

    def samples_of(kernel: Kernel, spec: TimerSpec) -> list[float]:
        orders[-1].append(next(i for i, (_, k) in enumerate(candidates) if k is kernel))
        return [1.0]

    rng = random.Random(3)
    for _ in range(2):
        orders.append([])
        best_rates(candidates, samples_of, SPEC.model_copy(update={"turns": 1}), 1, rng, 1.0)
    assert sorted(orders[0]) == sorted(orders[1]) == list(range(8))
    assert orders[0] != orders[1]
