"""The memory ceiling: the best rate of several copy methods, each rated by the bytes it
moves (read + written), each verified exact after it was timed (docs/adr/0078).

One copy alone reads under what a bench's own kernels reach: torch's `copy_` of 2 GiB
read 4253 GB/s on an H200 where ops-norm's row kernels moved 4303. So the CUDA ceiling is
the best of torch `copy_` at two sizes and a Triton streaming copy
(`kernels/copy_triton.py`), sampled in rounds as the GEMMs are (`calibrate_rounds`); the
large size is 4 GiB, where a copy's rate met that row kernel's in one call (4303.4 and
4302.7 GB/s, docs/memory-ceiling/h200-2026-12-04-vs-norm/).
A method whose library is missing is skipped with a note (`memory_triton_skipped`); one
whose output differs from its source is refused (`memory_refused`), never a ceiling.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernbench.analyze.rates import GB, per_second
from kernbench.errors import EXIT_FAILED, UserError
from kernbench.execute.calibrate_rounds import Samples, best_rates
from kernbench.execute.calibrate_setup import Part, Sampler, Sizes, median_seconds
from kernbench.kernels.base import Kernel
from kernbench.spec.fields import Scalar
from kernbench.spec.timer_model import TimerSpec


@dataclass(frozen=True)
class CopyMethod:
    """One way of copying `nbytes` from one buffer to another."""

    library: str  # torch, triton, numpy: a missing one skips the method
    nbytes: int

    @property
    def name(self) -> str:
        return f"{self.library}-copy-{self.nbytes >> 20}MiB"

    @property
    def work(self) -> float:
        """Bytes one call moves: read plus written."""
        return 2.0 * self.nbytes


@dataclass
class Copy:
    """A copy method ready to time, and the check of its output taken after timing."""

    kernel: Kernel
    exact: Callable[[], bool]


Build = Callable[[CopyMethod], Copy]  # raises ImportError when its library is missing


@dataclass
class MemoryCeiling(Part):
    gbs: float | None = None
    rates_gbs: dict[str, float] = field(default_factory=dict)  # per method, verified ones


def best_of_methods(
    methods: Sequence[tuple[CopyMethod, Build]],
    samples_of: Samples,
    spec: TimerSpec,
    rounds: int,
    rng: random.Random,
) -> MemoryCeiling:
    """The best verified rate of `methods` (GB/s of bytes moved), each the best of
    `rounds` rounds; which method gave it is `memory_method`."""
    notes: dict[str, Scalar] = {}
    built: list[tuple[CopyMethod, Copy]] = []
    for method, build in methods:
        try:
            built.append((method, build(method)))
        except ImportError as exc:
            notes[f"memory_{method.library}_skipped"] = str(exc) or type(exc).__name__
    rates = best_rates([(method, copy.kernel) for method, copy in built], samples_of, spec,
                       rounds, rng, GB)
    refused = [method.name for method, copy in built if not copy.exact()]
    if refused:
        notes["memory_refused"] = ", ".join(refused) + ": output differs from the source"
    gbs = {method.name: max(rates[method])
           for method, _ in built if method.name not in refused and rates[method]}
    if not gbs:
        raise UserError("memory ceiling: no copy method gave a verified rate ("
                        + "; ".join(f"{k}: {v}" for k, v in notes.items()) + ")", EXIT_FAILED)
    winner = max(gbs, key=gbs.__getitem__)
    notes["memory_method"] = winner
    notes["memory_methods"] = ", ".join(f"{name} {rate:.1f}" for name, rate in gbs.items()) \
        + " GB/s"
    described = ", ".join(method.name for method, _ in methods)
    return MemoryCeiling(
        method=f"device memory: the best of {described} (bytes read + written; each "
               f"verified exact after timing), each the best of {rounds} rounds",
        notes=notes, gbs=gbs[winner], rates_gbs=gbs,
    )


def fitted_copy_bytes(copy_bytes: int, device_bytes: int, least: int) -> int:
    """`copy_bytes`, halved (not below `least`) until the two large copies' four buffers,
    all allocated before any is timed, take at most half the device's memory."""
    while copy_bytes > least and 8 * copy_bytes > device_bytes:
        copy_bytes //= 2
    return copy_bytes


def cuda_methods(sizes: Sizes, device_bytes: int) -> list[tuple[CopyMethod, Build]]:
    large = fitted_copy_bytes(sizes.copy_bytes, device_bytes, sizes.small_copy_bytes)
    return [(CopyMethod("torch", large), torch_copy),
            (CopyMethod("torch", sizes.small_copy_bytes), torch_copy),
            (CopyMethod("triton", large), triton_copy)]


def memory_ceiling_cuda(sizes: Sizes, sampler: Sampler) -> MemoryCeiling:
    import torch

    device_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    methods = cuda_methods(sizes, device_bytes)
    ceiling = best_of_methods(methods, sampler.samples_of, sizes.copy_timer(),
                              sizes.rounds, random.Random(sizes.seed))
    torch.cuda.empty_cache()
    return ceiling


def _buffers(nbytes: int) -> tuple[Any, Any]:
    import torch

    source = torch.empty(nbytes // 4, device="cuda").normal_()
    return source, torch.empty_like(source)


def _exact(run: Callable[[], object], source: Any, target: Any) -> Callable[[], bool]:
    def exact() -> bool:
        import torch

        target.fill_(float("nan"))  # an element the copy misses stays NaN, never equal
        run()
        torch.cuda.synchronize()
        return bool(torch.equal(source, target))

    return exact


def torch_copy(method: CopyMethod) -> Copy:
    source, target = _buffers(method.nbytes)

    def run() -> object:
        return target.copy_(source)

    return Copy(Kernel(run=run), _exact(run, source, target))


def triton_copy(method: CopyMethod) -> Copy:
    from kernbench.kernels import copy_triton  # ImportError without Triton: skipped

    source, target = _buffers(method.nbytes)

    def run() -> None:
        copy_triton.copy(source, target)

    return Copy(Kernel(run=run), _exact(run, source, target))


def memory_ceiling_cpu(sizes: Sizes) -> MemoryCeiling:
    method = CopyMethod("numpy", sizes.cpu_copy_bytes)
    source = np.random.default_rng().standard_normal(method.nbytes // 8)
    target = np.empty_like(source)
    seconds = median_seconds(lambda: np.copyto(target, source), sizes.reps)
    gbs = per_second(method.work, seconds, GB)
    return MemoryCeiling(
        method=f"np.copyto of {method.nbytes >> 20} MiB (read + write)",
        notes={"memory_method": method.name}, gbs=gbs, rates_gbs={method.name: gbs},
    )
