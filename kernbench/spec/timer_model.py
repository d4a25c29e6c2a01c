"""The bench's `timer:` section (`TimerSpec`) and the timer registry its `kind` names."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from kernbench.spec.fields import Count, Flag, Fraction, PositiveFloat, Real, Strict

Duty = Literal["sustained", "isolated"]  # the state GPU samples are taken in (timing.steady)

# The timer registry: each timer `timer.kind` may name, as module:class (imported only when
# chosen; "auto" picks one). Adding a timer: a line here, and its class under timing/.
TIMERS = {
    "cpu": "kernbench.timing.cpu:CpuTimer",
    "event": "kernbench.timing.cuda:EventTimer",
    "graph": "kernbench.timing.cuda:GraphTimer",
    "cupti": "kernbench.timing.cupti:CuptiTimer",  # isolated samples, CUPTI's kernel times
}
TIMER_KINDS = ("auto", *TIMERS)
# The kinds that time CUDA work: off CUDA every cell gets the CPU timer, so `check_bench`
# refuses a bench that names one of these rather than report its cells as `cpu`.
CUDA_TIMERS = frozenset(TIMERS) - {"cpu"}
# Two settle blocks' SM clocks agree within this (`settle_clock`, timing.steady): the clock
# steps by 15 MHz and dithers a step or two at the top even on a steady card.
SETTLE_CLOCK_TOL = 0.02


# The fewest samples a cell takes in a round, or in a turn: the stop rule's floor.
MIN_SAMPLES = 3


class TimerSpec(Strict):
    """How one cell is sampled in one round."""

    warmup_s: Real = Field(0.05, ge=0, description="Seconds of untimed calls first.")
    budget_s: PositiveFloat = Field(0.5, description="Sampling stops when this many seconds "
                                    "of samples are taken.")
    min_samples: Count = Field(10, ge=MIN_SAMPLES,
                               description="Samples taken whatever the budget.")
    max_samples: Count = Field(100_000, ge=MIN_SAMPLES)
    rel_ci: Fraction = Field(0.01, description="Stop early once the 95% CI half-width "
                             "of the median, relative to the median, is under this (0.01: 1%).")
    l2: Literal["cold", "warm"] = Field("cold", description="cold: flush the GPU's L2 before "
                                        "each sample; a collective's calls rotate buffers.")
    kind: Literal[TIMER_KINDS] = Field(  # type: ignore[valid-type]
        "auto", description="auto: cpu on the CPU; on CUDA cupti for isolated samples, "
        "otherwise event (graph for tiny kernels)."
    )
    cell_timeout_s: PositiveFloat = Field(
        300.0, description="A cell running longer than this fails with a timeout."
    )
    # The steady state of GPU samples (ADR 0036).
    min_time_s: Real = Field(0.0, ge=0, description="Sample at least this long, converged or "
                             "not: a round spans the device's power episodes. <= budget_s.")
    turns: Count = Field(1, ge=1, le=100, description="Over 1: a round holds all its cells "
                         "and visits each this many times, a share of the budget a visit.")
    duty: Duty = Field("sustained", description="GPU timers: back to back, or an idle gap "
                       "per sample.")
    settle_s: Real = Field(0.5, ge=0, description="Sustained: blocks of calls until two "
                           "medians agree within settle_tol, at most this long past "
                           "settle_min_s (0: none).")
    settle_min_s: Real = Field(0.15, ge=0, description="Sustained: the settle phase runs at "
                               "least this long, each turn too: a GPU's boost window (ADR 0053).")
    settle_tol: Fraction = Field(0.01, description="Agreement that ends the settle phase "
                                 "(0.01: 1%).")
    settle_clock: Flag = Field(False, description="Settle also until two blocks' SM clocks "
                               f"(NVML) agree within {SETTLE_CLOCK_TOL:.0%}.")
    steady_tol: PositiveFloat = Field(0.03, description="Round medians spreading (max/min - 1) "
                                      "by more: the cell is flagged unsteady.")

    @model_validator(mode="after")
    def _samples_ordered(self) -> TimerSpec:
        if self.max_samples < self.min_samples:
            raise ValueError("max_samples must be at least min_samples")
        if self.min_time_s > self.budget_s:
            raise ValueError("min_time_s must be at most budget_s")
        if self.kind == "cupti" and self.duty != "isolated":
            raise ValueError("kind cupti times isolated samples only: set duty: isolated")
        return self

    def settles(self, device: str) -> bool:
        """Whether a cell runs a settle phase before its samples: sustained samples on a GPU
        (`device` "cuda"; a CPU has no power cap to sink into), unless `settle_s` is 0."""
        return device == "cuda" and self.duty == "sustained" and self.settle_s > 0


def turn_spec(spec: TimerSpec, turns: int) -> TimerSpec:
    """The timer of one turn: the budget, the minimum time, warm-up and settle shared out;
    at least MIN_SAMPLES a turn. `settle_min_s` is not shared: each
    turn starts from whatever the last cell left, inside the GPU's boost window."""
    return spec.model_copy(update={
        "budget_s": spec.budget_s / turns,
        "min_time_s": spec.min_time_s / turns,
        "warmup_s": spec.warmup_s / turns,
        "settle_s": spec.settle_s / turns,
        "min_samples": max(MIN_SAMPLES, math.ceil(spec.min_samples / turns)),
        "max_samples": max(MIN_SAMPLES, spec.max_samples // turns),
    })
