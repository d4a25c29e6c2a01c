"""The kernel contract.

A bench names a kernel factory: a built-in name (see `kernbench.kernels.BUILTINS`) or
`module:factory` imported from the bench file's folder. The factory is called once per
cell with every cell parameter as a keyword (axis values, variant options, `device`,
and `dtype` where the bench has a dtype axis) and returns either a zero-argument
callable that runs one iteration, or a `Kernel` when it has more to say: a correctness
check, a config space to autotune, stage timings, a tile size.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import Field

# Annotations of a factory's parameters that `validate` checks a bench's values against
# (docs/adr/0065): a size of 0 or a negative wait is an error at its line, not a failed cell.
Positive = Annotated[int, Field(gt=0)]
PositiveReal = Annotated[float, Field(gt=0)]


class CorrectnessError(AssertionError):
    """A kernel's output disagrees with its reference beyond the tolerance."""


class ContractError(TypeError):
    """A factory or kernel that breaks the contract. kernbench notices it in its own code,
    whose line says nothing to the kernel's author: `defined_at` names the callable at
    fault, the place to open, which `failure.raised_at` gives as the cell's place."""

    def __init__(self, message: str, culprit: object = None) -> None:
        super().__init__(message)
        self.defined_at = defined_at(culprit)


def defined_at(function: object) -> str | None:
    """`file.py:LINE, in NAME` of a Python function's `def` (None for anything else)."""
    if not callable(function):
        return None
    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None:
        return None
    return f"{Path(code.co_filename).name}:{code.co_firstlineno}, in {code.co_name}"


@dataclass(frozen=True)
class CheckResult:
    rel_err: float  # ||out - ref|| / ||ref|| against a float64 reference
    tolerance: float

    @property
    def ok(self) -> bool:
        # NaN compares False: a NaN result never passes.
        return self.rel_err <= self.tolerance


@dataclass(frozen=True)
class TuneReport:
    """What a self-tuning kernel (e.g. one under @triton.autotune) chose, and why."""

    winner: Mapping[str, Any]
    candidates: list[dict[str, Any]]  # each {"config": {...}, "time_s": float | None}


class RankGroup(Protocol):
    """What a kernel run by several ranks at once (a collective) gives its timer.

    Every rank calls each method in the same order (each is a collective operation): the
    timer decides from `agree_max`'s results only, so all ranks decide alike.
    """

    world_size: int
    backend: str

    def barrier(self) -> None: ...

    def time_batches(
        self, count: int, reps: int, duty: str = "sustained", l2: str = "cold"
    ) -> list[float]:
        """This rank's seconds for each of `count` batches of `reps` calls, taken under
        `duty` (timing.steady: sustained or isolated); `l2` cold: the calls find no data
        in the cache that an earlier call left (a kernel with one buffer may ignore it)."""
        ...

    def timing_info(self) -> dict[str, Any]:
        """How the batches were timed (graphs used, a capture that failed), for results."""
        ...

    def agree_max(self, values: list[float]) -> list[float]:
        """Each value's maximum over the ranks (every rank gets the same list)."""
        ...

    def per_rank(self, value: float) -> list[float]:
        """Every rank's `value`, in rank order."""
        ...


@dataclass
class Kernel:
    run: Callable[[], object]
    # Called once per cell before timing, on fresh random inputs.
    check: Callable[[], CheckResult] | None = None
    # Stage names and, after a call, each stage's duration in seconds (staged variants).
    stages: tuple[str, ...] = ()
    stage_times: Callable[[], Mapping[str, float]] | None = None
    # The kernel's tile (M, N, K): shapes under it cannot fill one tile ("under-tile").
    tile: tuple[int, ...] | None = None
    # Autotuning: the config space and a builder. The framework times every candidate on
    # the first run and pins the winner; replays call build(pinned) and time nothing.
    configs: list[dict[str, Any]] = field(default_factory=list)
    build: Callable[[Mapping[str, Any]], Kernel | Callable[[], object]] | None = None
    # A kernel that tunes itself (triton.autotune) runs its tuner here and reports; a
    # replay then calls build(pinned) instead.
    self_tune: Callable[[], TuneReport] | None = None
    # A kernel that must time itself replaces the timer with this.
    measure: Callable[[Any], Any] | None = None  # (TimerSpec) -> timing.base.Measurement
    # A kernel run by several ranks together: the ranks timer samples it through these, so
    # every rank runs the same number of calls and the slowest rank's time is the cell's.
    ranks: RankGroup | None = None
    # A synchronize for timers that read a host clock around asynchronous work.
    synchronize: Callable[[], None] | None = None
    close: Callable[[], None] | None = None
    info: dict[str, Any] = field(default_factory=dict)  # anything worth keeping in results

    @property
    def tunable(self) -> bool:
        return self.build is not None and (bool(self.configs) or self.self_tune is not None)


def as_kernel(made: Kernel | Callable[[], object], factory: object = None) -> Kernel:
    """What a factory (or a config's `build`) returned, as a `Kernel`; one that breaks the
    contract raises a ContractError saying how, and where the factory (or its run) is
    defined, rather than failing later inside a timer or doing less than it says (a config
    space without `build` is never tuned)."""
    if isinstance(made, Kernel):
        kernel = made
    elif callable(made):
        kernel = Kernel(run=made)
    else:
        kind = type(made).__name__
        raise ContractError(f"a kernel factory must return a callable or a Kernel, not {kind}",
                            factory)
    if not callable(kernel.run):
        raise ContractError(
            f"a Kernel's run must be callable, not {type(kernel.run).__name__}", factory)
    needed = _arguments_needed(kernel.run)
    if needed:
        name = getattr(kernel.run, "__qualname__", "run")
        raise ContractError(f"a kernel's run is called with no arguments, but {name} needs "
                            f"{', '.join(needed)}", kernel.run)
    if kernel.configs and kernel.build is None:
        raise ContractError("a Kernel with configs needs build(config) to make each candidate",
                            factory)
    return kernel


def check_result(result: object, check: object = None) -> CheckResult:
    """What a kernel's `check` returned, which must be a `CheckResult`."""
    if not isinstance(result, CheckResult):
        raise ContractError("a kernel's check must return a CheckResult(rel_err, tolerance), "
                            f"not {type(result).__name__}", check)
    return result


def _arguments_needed(run: Callable[..., object]) -> list[str]:
    """The parameters a call with no arguments leaves unset (none where the signature
    cannot be read)."""
    try:
        parameters = inspect.signature(run).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters
            if p.default is inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
