"""The host link's ceilings: pinned host<->device copies, each way one long measurement
(bytes copied once: the link carries each byte one way)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernbench.analyze.rates import GB, per_second
from kernbench.execute.calibrate_setup import Part, Sampler, Sizes
from kernbench.kernels.base import Kernel


@dataclass
class HostCeilings(Part):
    host_to_device_gbs: float | None = None
    device_to_host_gbs: float | None = None


def host_ceilings_cuda(sizes: Sizes, sampler: Sampler) -> HostCeilings:
    import torch

    h2d = _copy_gbs(sampler, sizes, "cpu", "cuda")
    d2h = _copy_gbs(sampler, sizes, "cuda", "cpu")
    torch.cuda.empty_cache()
    return HostCeilings(method=f"pinned host copies of {sizes.host_bytes >> 20} MiB each way",
                        host_to_device_gbs=h2d, device_to_host_gbs=d2h)


def _copy_gbs(sampler: Sampler, sizes: Sizes, source: str, target: str) -> float:
    """GB/s of copying `sizes.host_bytes` from `source` to `target` memory ("cpu" is
    pinned host memory)."""
    import torch

    def buffer(where: str) -> Any:
        if where == "cpu":
            return torch.empty(sizes.host_bytes // 4).pin_memory()
        return torch.empty(sizes.host_bytes // 4, device=where)

    src, dst = buffer(source), buffer(target)
    src.normal_()
    seconds = sampler.median_s(Kernel(run=lambda: dst.copy_(src, non_blocking=True)),
                               sizes.copy_timer())
    return per_second(src.nbytes, seconds, GB)
