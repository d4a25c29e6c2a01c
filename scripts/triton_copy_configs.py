"""Which Triton streaming copy reaches torch's copy_? The memory ceiling's Triton copy
(`kernels/copy_triton.py`) was BLOCK 8192, 8 warps, evict_first loads until this script's
run on 2026-12-04, which read it about 9% under torch's `copy_` of 4 GiB on an H200 while
torch.compile's rms_norm kernel met it; that run chose BLOCK 1024, 8 warps, plain loads.
This times block copies of several block sizes, warp counts and load eviction policies,
persistent grid-stride copies, torch.compile's copy and torch's copy_, all of 4 GiB a
buffer, with the memory ceiling's sampler and rounds (`calibrate_rounds.best_rates`), each
output checked exact; prints GB/s of bytes moved (read + written), best first.
Usage (on a CUDA machine): python3 scripts/triton_copy_configs.py [MiB]   (default 4096)
"""

import random
import sys
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kernbench.analyze.rates import GB
from kernbench.execute.calibrate_rounds import best_rates
from kernbench.execute.calibrate_setup import Sampler
from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec

TIMER = TimerSpec(warmup_s=0.1, budget_s=0.5, min_samples=10, rel_ci=0.005)


@triton.jit
def _block_copy(source, target, n, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    values = tl.load(source + offsets, mask=inside, eviction_policy=EVICT)
    tl.store(target + offsets, values, mask=inside)


@triton.jit
def _persistent_copy(source, target, n, BLOCK: tl.constexpr):
    blocks = tl.cdiv(n, BLOCK)
    for block in range(tl.program_id(0), blocks, tl.num_programs(0)):
        offsets = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        inside = offsets < n
        tl.store(target + offsets, tl.load(source + offsets, mask=inside), mask=inside)


@dataclass(frozen=True)
class Config:
    name: str
    nbytes: int

    @property
    def work(self) -> float:
        return 2.0 * self.nbytes


def configs(source, target):
    n = source.numel()
    for block in (1024, 2048, 4096, 8192, 16384, 32768):
        for warps in (4, 8, 16):
            for evict in ("evict_first", ""):
                grid = (triton.cdiv(n, block),)
                yield (f"block-{block}-w{warps}-{evict or 'normal'}",
                       lambda g=grid, b=block, w=warps, e=evict: _block_copy[g](
                           source, target, n, BLOCK=b, EVICT=e, num_warps=w))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for per_sm in (2, 4, 8):
        for block in (4096, 8192):
            yield (f"persistent-{per_sm}xSM-{block}-w8",
                   lambda g=(sms * per_sm,), b=block: _persistent_copy[g](
                       source, target, n, BLOCK=b, num_warps=8))
    compiled = torch.compile(lambda x, y: y.copy_(x))
    yield "torch.compile-copy", lambda: compiled(source, target)
    yield "torch-copy_", lambda: target.copy_(source)


def main(mebibytes: int) -> None:
    nbytes = mebibytes << 20
    source = torch.empty(nbytes // 4, device="cuda").normal_()
    target = torch.empty_like(source)
    candidates, refused = [], []
    for name, run in configs(source, target):
        target.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        if not torch.equal(source, target):
            refused.append(name)
            continue
        candidates.append((Config(name, nbytes), Kernel(run=run)))
    rates = best_rates(candidates, Sampler().samples_of, TIMER, 3, random.Random(0), GB)
    for config, per_round in sorted(rates.items(), key=lambda item: -max(item[1])):
        print(f"{config.name:34s} {max(per_round):8.1f} GB/s  rounds "
              + " ".join(f"{rate:.1f}" for rate in per_round))
    for name in refused:
        print(f"{name}: output differs from the source")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)
