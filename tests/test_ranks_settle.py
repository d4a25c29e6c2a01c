"""The settle phase of a collective's sustained samples (timing.ranks.settle_ranks, ADR 0064):
every decision from agreed numbers, so all ranks run the same blocks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import choose_timer
from kernbench.timing.nvml import Reading
from kernbench.timing.ranks import RanksTimer

SPEC = TimerSpec(warmup_s=0.0, min_samples=10, max_samples=200, budget_s=0.05,
                 settle_min_s=0.05, settle_s=0.2, settle_tol=0.01)


class Ranks:
    """A RankGroup on one process. `per_call(n)`: the slowest rank's seconds a call in the
    n-th batch; `peer(values)`: what the other rank offers to each `agree_max`."""

    world_size = 2
    backend = "fake"

    def __init__(
        self,
        per_call: Callable[[int], float],
        peer: Callable[[list[float]], list[float]] = lambda values: values,
    ) -> None:
        self.per_call, self.peer = per_call, peer
        self.batches = 0

    def barrier(self) -> None:
        pass

    def timing_info(self) -> dict:
        return {}

    def time_batches(
        self, count: int, reps: int, duty: str = "sustained", l2: str = "cold"
    ) -> list[float]:
        times = [reps * self.per_call(self.batches + i) for i in range(count)]
        self.batches += count
        return times

    def agree_max(self, values: list[float]) -> list[float]:
        return [max(mine, theirs) for mine, theirs in zip(values, self.peer(values), strict=True)]

    def per_rank(self, value: float) -> list[float]:
        return [value, value]


def measure(ranks: Ranks, spec: TimerSpec = SPEC, read_clock=None, device: str = "cuda"):
    return RanksTimer(read_clock, device=device).measure(Kernel(run=lambda: None, ranks=ranks),
                                                         spec)


def cooling(batches: int, steady_s: float = 1e-5) -> Callable[[int], float]:
    """Calls 20% slow for the first `batches` batches, then steady."""
    return lambda n: steady_s * (1.2 if n < batches else 1.0)


def test_a_sustained_collective_settles_on_agreed_time_before_its_samples() -> None:
    ranks = Ranks(cooling(60))
    measured = measure(ranks)
    settle = measured.settle
    assert settle is not None and settle["settled"] is True
    medians = settle["block_medians_s"]
    assert medians[0] == pytest.approx(1.2e-5) and medians[-1] == pytest.approx(1e-5)
    # Its clock is the agreed sample time (not a wall clock, which differs from rank to
    # rank): at least the floor, and ended by two agreeing blocks soon after it.
    assert SPEC.settle_min_s <= settle["seconds"] < SPEC.settle_min_s + 0.1
    reps = measured.extra["calls_per_sample"]
    assert settle["calls"] % reps == 0 and settle["calls"] >= settle["seconds"] / 1.2e-5
    assert measured.warmup_calls > settle["calls"]
    # The samples come after it, on the steady time.
    assert measured.samples_s == pytest.approx([1e-5] * len(measured.samples_s))


def test_a_collective_that_never_agrees_stops_settling_at_the_cap() -> None:
    measured = measure(Ranks(lambda n: 1e-5 * (1.0 + 1e-3 * n)))  # 2% slower a block
    settle = measured.settle
    assert settle["settled"] is False
    assert settle["seconds"] >= SPEC.settle_min_s + SPEC.settle_s


@pytest.mark.parametrize(
    ("spec", "device"),
    [
        (SPEC.model_copy(update={"duty": "isolated"}), "cuda"),
        (SPEC.model_copy(update={"settle_s": 0.0}), "cuda"),
        (SPEC, "cpu"),
    ],
    ids=["isolated", "settle_s 0", "on a CPU"],
)
def test_no_settle_phase_where_none_is_asked(spec: TimerSpec, device: str) -> None:
    assert measure(Ranks(cooling(60)), spec, device=device).settle is None


def test_settle_waits_for_the_slowest_ranks_clock_and_records_it() -> None:
    # Times steady from the start; this rank's clock steady at 1980 MHz, the peer's falling
    # by 5% a block for its first 8 readings. Clocks travel negated (a MAX finds the MIN).
    peer_clocks = iter([1980.0 * 0.95 ** min(k, 8) for k in range(1000)])

    def peer(values: list[float]) -> list[float]:
        return [-next(peer_clocks)] if len(values) == 1 and values[0] < 0 else values

    spec = SPEC.model_copy(update={"settle_clock": True})
    measured = measure(Ranks(lambda n: 1e-5, peer), spec,
                       read_clock=lambda: Reading(1980.0, 0, 300.0))
    clocks = measured.settle["block_clocks_mhz"]
    assert clocks[0] == pytest.approx(1980.0)
    assert clocks[-1] == pytest.approx(1980.0 * 0.95**8)  # waited for the peer to settle
    assert measured.settle["settled"] is True and len(clocks) >= 9


def test_a_rank_without_a_clock_reading_holds_its_peers() -> None:
    def peer(values: list[float]) -> list[float]:
        return [-1500.0] if len(values) == 1 and values[0] < 0 else values

    measured = measure(Ranks(lambda n: 1e-5, peer), SPEC, read_clock=lambda: None)
    assert set(measured.settle["block_clocks_mhz"]) == {1500.0}


def test_collectives_settle_on_gpus_only() -> None:
    kernel = Kernel(run=lambda: None, ranks=Ranks(lambda n: 1e-5))
    assert measure(Ranks(cooling(60)), SPEC, device="cuda").settle is not None
    assert choose_timer(kernel, SPEC, "cuda").device == "cuda"
    assert choose_timer(kernel, SPEC, "cpu").device == "cpu"


@pytest.mark.slow
def test_two_gloo_ranks_settle_through_the_same_blocks(tmp_path: Path) -> None:
    """Real ranks whose wall clocks, times and NVML readings differ (rank 1 has none) end
    their settle phase at the same block with the same record, and neither hangs."""
    from collective_ranks import run_two_gloo_ranks

    done = run_two_gloo_ranks("settle", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    zero, one = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert zero == one
    assert set(zero["settle"]["block_clocks_mhz"]) == {1500.0}
    assert zero["settle"]["calls"] > 0 and zero["samples"] >= 5
