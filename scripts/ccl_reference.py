"""Reference collective timings: a plain torch.distributed loop, nccl-tests style.

Nothing of kernbench runs here (it reads only its hold clock), so its numbers check the
`collective` kernel's:

    torchrun --standalone --nproc-per-node 2 scripts/ccl_reference.py \\
        --sizes 4194304,67108864,1073741824 --out ref.json

For each op and size: barrier, `--warmup` untimed calls, then `--iters` calls timed as
one loop (CUDA events on GPUs, perf_counter on CPU) and divided by the count; the
cell's time is the slowest rank's. `--graph` captures the `--iters` calls in one CUDA
graph and times its replays (nccl-tests' `-G`); `--repeats` times the loop that many
times, each after a barrier, and reports the median (and the fastest): a process per
GPU, as kernbench runs its ranks, with nothing of kernbench's sampling. busbw uses the
nccl-tests factors (inlined here on purpose). Rank 0 prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernbench.analyze.rates import GB, per_second  # noqa: E402 - algbw as kernbench divides it
from kernbench.kernels.gpu_hold import HOLD_CLOCK_HZ  # noqa: E402 - a constant only

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
OPS = ("allreduce", "allgather", "reduce_scatter")


def busbw_factor(op: str, n: int) -> float:
    return 2 * (n - 1) / n if op == "allreduce" else (n - 1) / n


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--sizes", default=",".join(str(2**p) for p in range(10, 31, 2)))
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--inplace", action="store_true", help="allgather/reduce_scatter in place")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--graph", action="store_true", help="time CUDA graph replays")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--samples", type=int, default=0,
                        help="CUDA: queue this many timed loops back to back per repeat "
                        "(events between them, one host sync at the end) and take their median")
    parser.add_argument("--gpu-sync", action="store_true",
                        help="with --samples: a one-element all-reduce before each timed loop, "
                        "as kernbench's collective sample starts")
    parser.add_argument("--hold-ms", type=float, default=0.0,
                        help="with --samples: a spinning kernel of this long ahead of them, so "
                        "the host enqueues them all before the GPU starts (kernbench's hold)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.samples < 0 or (args.gpu_sync and not args.samples):
        parser.error("--samples takes a count of 1 or more; --gpu-sync needs --samples")
    return args


def buffers(op: str, size: int, dtype: torch.dtype, inplace: bool, device: Any) -> Any:
    rank, n = dist.get_rank(), dist.get_world_size()
    elements = size // torch.tensor([], dtype=dtype).element_size()
    chunk = elements // n
    full = torch.ones(elements, dtype=dtype, device=device)
    if op == "allreduce":
        return lambda: dist.all_reduce(full)
    own = full[rank * chunk : (rank + 1) * chunk]
    if op == "allgather":
        source = own if inplace else torch.ones(chunk, dtype=dtype, device=device)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda: gather(full, source)
    target = own if inplace else torch.empty(chunk, dtype=dtype, device=device)
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return lambda: scatter(target, full)


def captured(call: Any, iters: int) -> Any:
    """`iters` calls as one CUDA graph's replay."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            call()
    torch.cuda.synchronize()
    return lambda: graph.replay()


def loop(call: Any, iters: int, replay: Any = None) -> None:
    """The timed body: one graph replay of `iters` calls, or the calls themselves."""
    if replay is not None:
        replay()
    else:
        for _ in range(iters):
            call()


def time_loop(call: Any, iters: int, cuda: bool, replay: Any = None) -> float:
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loop(call, iters, replay)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / iters
    began = time.perf_counter()
    loop(call, iters)
    return (time.perf_counter() - began) / iters


def time_samples(call: Any, iters: int, samples: int, gpu_sync: bool, replay: Any,
                 hold_ms: float = 0.0) -> list[float]:
    """Seconds per call of each of `samples` timed loops queued back to back."""
    one = torch.zeros(1, device="cuda")
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(samples)]
    if hold_ms:
        torch.cuda._sleep(int(hold_ms * 1e-3 * HOLD_CLOCK_HZ))
    for start, end in pairs:
        if gpu_sync:
            dist.all_reduce(one)
        start.record()
        loop(call, iters, replay)
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) / 1e3 / iters for s, e in pairs]


def main() -> None:
    args = parse()
    cuda = torch.cuda.is_available()
    device: Any = "cpu"
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        timeout=timedelta(seconds=300),
        **({"device_id": device} if cuda else {}),
    )
    rank, n = dist.get_rank(), dist.get_world_size()
    rows = []
    for op in args.ops.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            call = buffers(op, size, DTYPES[args.dtype], args.inplace, device)
            dist.barrier()
            for _ in range(args.warmup):
                call()
            if cuda:
                torch.cuda.synchronize()
            replay = captured(call, args.iters) if args.graph and cuda else None
            repeats, sampled = [], []
            for _ in range(args.repeats):
                dist.barrier()
                if cuda and args.samples:
                    samples = time_samples(call, args.iters, args.samples, args.gpu_sync, replay,
                                           args.hold_ms)
                    sampled.append(samples)
                    seconds = statistics.median(samples)
                else:
                    seconds = time_loop(call, args.iters, cuda, replay)
                mine = torch.tensor([seconds], dtype=torch.float64).to(device)
                dist.all_reduce(mine, op=dist.ReduceOp.MAX)
                repeats.append(float(mine.item()))
            seconds = statistics.median(repeats)
            algbw = per_second(size, seconds, GB)
            # Each rank's samples, to read skew between the ranks and sample-to-sample
            # patterns from (rank r's list of repeats, in µs).
            ranks_samples: list[Any] = [None] * n
            dist.all_gather_object(ranks_samples, [[t * 1e6 for t in r] for r in sampled])
            rows.append(
                {
                    "op": op,
                    "bytes": size,
                    "time_s": seconds,
                    "min_time_s": min(repeats),
                    "algbw_gbs": algbw,
                    "busbw_gbs": algbw * busbw_factor(op, n),
                    **({"rank_samples_us": ranks_samples} if sampled else {}),
                }
            )
            if rank == 0:
                row = rows[-1]
                print(
                    f"{op:>15} {size:>12} B  {seconds * 1e6:12.2f} us  "
                    f"(min {row['min_time_s'] * 1e6:.2f})  "
                    f"algbw {row['algbw_gbs']:8.2f} GB/s  busbw {row['busbw_gbs']:8.2f} GB/s",
                    flush=True,
                )
            del call, replay
    if rank == 0 and args.out:
        report = {
            "world_size": n,
            "backend": dist.get_backend(),
            "dtype": args.dtype,
            "inplace": args.inplace,
            "warmup": args.warmup,
            "iters": args.iters,
            "graph": args.graph,
            "repeats": args.repeats,
            "samples": args.samples,
            "gpu_sync": args.gpu_sync,
            "hold_ms": args.hold_ms,
            "device": torch.cuda.get_device_name() if cuda else "cpu",
            "torch": torch.__version__,
            "results": rows,
        }
        with open(args.out, "w") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
