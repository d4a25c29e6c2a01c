"""Whether a collective's sustained samples on CUDA replay captured graphs, how those are
captured, over how many graphs a cold sample rotates, and the NCCL setting they need
(ADR 0046).

NCCL's graph mixing support (on by default) lets captured and eager calls on one
communicator be outstanding at once; for it each captured call records and waits on
events of a stream NCCL shares with eager work. On 2 H200s that made every graph launch
wait on the host for the work queued before it (the hold: 52 ms of enqueueing a sample
against 1 ms of GPU), so graphs of 10 NCCL calls read 13-27 µs a call where nccl-tests'
`-G` reads 5-6 (docs/gpu-runs.md, ninth session). kernbench never has a graph and eager
calls outstanding together, so it turns the support off unless the environment says
otherwise; with it off the same graphs read 4.3-6.0 µs from 1 to 64 KiB, in 1-3 ms of
enqueueing a sample.
"""

from __future__ import annotations

import math
import os

# "1" or "0": sustained samples replay captured graphs of the calls, or run them eager.
GRAPHS_ENV = "KERNBENCH_COLLECTIVE_GRAPHS"
# How those graphs are captured: "driver" (thread-local, as nccl-tests' -G;
# kernels/driver_graph.py) or "torch" (torch.cuda.graph).
CAPTURE_ENV = "KERNBENCH_COLLECTIVE_CAPTURE"
CAPTURES = ("torch", "driver")
# Through NCCL directly, the driver's capture: on 2 H200s its graphs read 3-4% (~0.17 µs a
# call) faster than torch's of the same calls, 1 to 64 KiB. torch.distributed's calls keep
# torch's capture, whose bookkeeping they expect.
DEFAULT_CAPTURE = {"nccl": "driver", "torch": "torch"}
MIXING_ENV = "NCCL_GRAPH_MIXING_SUPPORT"
# Calls per captured graph (a sample replays whole graphs and one of the remainder).
GRAPH_CALLS = 10
# The most graphs a cold sample's replays rotate through, each on slots of its own: 5 of
# 10 calls reach 50 distinct slots, as nccl-tests' -G graph holds 50 iterations, each on a
# shifted buffer (every slot from 3 MiB up on an H200). More distinct graphs queued behind
# the hold block the host: on 2 H200s rings of 24-64 graphs took 51 ms to enqueue a
# sample (the whole hold) and read 6.7-11.6 µs a call where 4.3-6 was the GPU's; 12, 3-11 ms;
# 6 or fewer, 0.05-2.4 ms (docs/gpu-runs.md, ninth session).
MAX_GRAPH_RING = 5


def captures_graphs() -> bool:
    """Whether sustained samples replay graphs: GRAPHS_ENV, else yes."""
    return os.environ.get(GRAPHS_ENV, "1") == "1"


def capture_mode(api: str) -> str:
    """How graphs are captured: CAPTURE_ENV, else the API's default; checked."""
    mode = os.environ.get(CAPTURE_ENV, DEFAULT_CAPTURE[api])
    if mode not in CAPTURES:
        raise ValueError(f"{CAPTURE_ENV}={mode!r}; known: {', '.join(CAPTURES)}")
    return mode


def prepare_nccl() -> None:
    """Graph mixing off, unless the environment sets it; before NCCL reads it (its first
    communicator in this process)."""
    os.environ.setdefault(MIXING_ENV, "0")


def nccl_settings() -> dict[str, str]:
    """The NCCL setting a result depends on, as this process runs it."""
    return {"nccl_graph_mixing_support": os.environ.get(MIXING_ENV, "1 (NCCL's default)")}


def graph_ring(slots: int) -> int:
    """Distinct graphs a cold sample rotates through for buffers of `slots` slots."""
    return max(1, min(MAX_GRAPH_RING, math.ceil(slots / GRAPH_CALLS)))
