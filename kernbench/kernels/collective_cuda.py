"""Timing a collective on one rank's GPU, as nccl-tests does (issue 17, ADR 0042, 0046).

A batch of samples starts, on each rank's stream, with a one-element all-reduce: a barrier
*on the GPUs*, so every rank starts its first timed region within a few microseconds of
the others, whatever its host was doing. Each sample is a start event, the body, an end
event. The body is

- `sustained`: `reps` collectives back to back, as replays of graphs of GRAPH_CALLS calls
  captured once (nccl-tests' `-G`; `collective_graphs` says how and why), or with
  KERNBENCH_COLLECTIVE_GRAPHS=0 as eager calls (nccl-tests' default; the hold covers
  their enqueueing). Under `l2: cold` each call takes the next copy of the buffers
  (`collective_buffers`): a graph holds the copies its capture reached, so the replays
  rotate through a ring of graphs captured one after another (`graph_ring`). The samples
  of a batch follow each other with nothing between them: each one's last collective ends
  on every rank at once, so the next starts aligned without a barrier of its own;
- `isolated`: one eager collective, after a GPU barrier of its own.

A batch is queued behind a spinning kernel (`gpu_hold`), held as the CUDA timers hold
theirs (`gpu_hold.HostPace`: a short lead, plus what the host loses to the GPU over the
batch; a graph launch costs the host more than its 10 calls take the GPU), so no sample
waits on the host. The timer reduces the per-sample times with MAX over the ranks (the
slowest rank's time is the collective's). Where a graph cannot be captured (an older
NCCL, a backend without graph support) the sustained body falls back to eager calls, and
`info()` says why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kernbench.kernels import gpu_hold
from kernbench.kernels.collective_graphs import GRAPH_CALLS
from kernbench.kernels.driver_graph import DriverGraph
from kernbench.kernels.events import elapsed_s


class CudaBatches:
    """The CUDA side of `Collective.time_batches`."""

    def __init__(self, graphs: bool = True, capture: str = "torch") -> None:
        """`graphs`: sustained samples replay captured graphs; `capture`: by
        `torch.cuda.graph` (torch) or the driver's thread-local capture (driver,
        `driver_graph`)."""
        import torch  # lazy: torch is optional
        import torch.distributed as dist

        self._torch, self._dist = torch, dist
        self._capture, self._capture_by = graphs, capture
        self._sync_buffer = torch.zeros(1, dtype=torch.float32, device="cuda")
        self._graphs: dict[tuple[Callable[[], object], int, int], Any] = {}
        self._ring_next: dict[Callable[[], object], int] = {}  # the next full graph's index
        self._ring = 1  # the ring the last sustained sample rotated through
        self._replayed: list[int] = []  # the graph lengths a sustained sample last replayed
        self._pace = gpu_hold.HostPace()
        self._past_hold = gpu_hold.PastHold()
        self._capture_s = 0.0  # host seconds spent capturing and instantiating graphs
        self.graph_failure: str | None = None

    def _sync(self) -> None:
        self._dist.all_reduce(self._sync_buffer)

    def _replays(self, call: Callable[[], object], reps: int, ring: int) -> list[Any] | None:
        """The graphs whose replays, in order, make `reps` calls (GRAPH_CALLS each, the next
        ones of a ring of `ring` graphs, and one of the remainder); None if a capture
        fails."""
        whole, rest = divmod(reps, GRAPH_CALLS)
        keys = [(GRAPH_CALLS, self._turn(call, ring)) for _ in range(whole)]
        keys += [(rest, 0)] if rest else []
        graphs = [self._graph(call, length, index) for length, index in keys]
        if any(graph is None for graph in graphs):
            return None
        self._replayed, self._ring = [length for length, _ in keys], ring
        return graphs

    def _turn(self, call: Callable[[], object], ring: int) -> int:
        index = self._ring_next.get(call, 0) % ring
        self._ring_next[call] = index + 1
        return index

    def _graph(self, call: Callable[[], object], reps: int, index: int = 0) -> Any | None:
        """Graph `index` of `reps` calls, captured once per call, length and index (a
        rotating call captures the slots it reaches); None if capture fails."""
        if self.graph_failure is not None:
            return None
        if (call, reps, index) not in self._graphs:
            torch = self._torch
            began = time.perf_counter()
            try:
                torch.cuda.synchronize()
                if self._capture_by == "driver":
                    graph = _DriverReplay(torch, call, reps)
                else:
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        for _ in range(reps):
                            call()
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - any capture failure: eager instead
                self.graph_failure = f"{type(exc).__name__}: {exc}"
                torch.cuda.synchronize()
                return None
            self._graphs[call, reps, index] = graph
            self._capture_s += time.perf_counter() - began
        return self._graphs[call, reps, index]

    def time(
        self, count: int, reps: int, duty: str, call: Callable[[], object], ring: int = 1
    ) -> list[float]:
        """This rank's seconds for each of `count` samples of `reps` calls (sustained
        graphs: rotating through `ring` graphs of them), queued in
        sub-batches short enough for one hold to cover their enqueueing. The ranks agree
        on each sub-batch's length (the smallest fitting one): each begins with a GPU
        barrier, a collective that every rank must call as often as the others."""
        seconds: list[float] = []
        while len(seconds) < count:
            seconds += self._batch(self._agree_min(self._pace.fitting(count - len(seconds))),
                                   reps, duty, call, ring)
        return seconds

    def _agree_min(self, value: int) -> int:
        found = self._torch.tensor([value], dtype=self._torch.int64, device="cuda")
        self._dist.all_reduce(found, op=self._dist.ReduceOp.MIN)
        return int(found.item())

    def _batch(
        self, count: int, reps: int, duty: str, call: Callable[[], object], ring: int
    ) -> list[float]:
        torch = self._torch
        sustained_graphs = duty == "sustained" and self._capture
        # Each sample replays its own turn of the ring: captured (before the hold) per sample.
        samples = [self._replays(call, reps, ring) if sustained_graphs else None
                   for _ in range(count)]

        def body(graphs: list[Any] | None) -> None:
            if graphs is not None:
                for graph in graphs:
                    graph.replay()
            else:
                for _ in range(reps):
                    call()

        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(count)
        ]
        gpu_hold.hold(self._pace.hold_for(count))
        self._past_hold.held(torch.cuda.Event())
        began = time.perf_counter()
        for index, ((start, end), graphs) in enumerate(zip(events, samples, strict=True)):
            if index == 0 or duty == "isolated":
                self._sync()
            start.record()
            body(graphs)
            end.record()
        self._pace.enqueued(count, time.perf_counter() - began)
        # Past the hold already: the samples may time the host (as NCCL's graph mixing
        # support, or too many distinct graphs queued, made them: collective_graphs).
        self._past_hold.queued()
        torch.cuda.synchronize()
        seconds = [elapsed_s(start, end) for start, end in events]
        self._pace.ran(seconds)
        return seconds

    def close(self) -> None:
        """Free the captured graphs (torch's free themselves when dropped; the driver's
        are destroyed here)."""
        for graph in self._graphs.values():
            if isinstance(graph, _DriverReplay):
                graph.close()
        self._graphs.clear()

    def info(self) -> dict[str, Any]:
        """How the sustained samples ran: eager calls, or replays of graphs of these lengths
        (each sample's, in order: `graph_ops`), how many graphs were captured and in how
        long; the host's enqueueing time per sample against the GPU's last median (a host
        slower than its GPU is what the hold has to cover), and in how many batches the
        hold ended before the host had queued them (their samples may time the host)."""
        if not self._capture or self.graph_failure is not None or not self._replayed:
            info: dict[str, Any] = {"sustained_body": "eager"}
        else:
            info = {"sustained_body": "graph", "graph_ops": self._replayed,
                    "graph_ring": self._ring, "graph_capture": self._capture_by,
                    "graphs_captured": len(self._graphs),
                    "graph_capture_s": round(self._capture_s, 4)}
        if self._pace.host_s is not None:
            info["host_enqueue_s"] = self._pace.host_s
            info["gpu_sample_s"] = self._pace.gpu_s
            info.update(self._past_hold.info())
        if self.graph_failure is not None:
            info["graph_capture_failed"] = self.graph_failure
        return info


class _DriverReplay:
    """A `DriverGraph` of `reps` calls, captured on a side stream of its own (capture is
    illegal on the legacy default stream) and replayed on torch's current stream, as
    `CUDAGraph.replay()` is."""

    def __init__(self, torch: Any, call: Callable[[], object], reps: int) -> None:
        self._torch = torch
        self._side = torch.cuda.Stream()  # kept: the graph was captured from it
        self._side.wait_stream(torch.cuda.current_stream())

        def body() -> None:
            for _ in range(reps):
                call()

        with torch.cuda.stream(self._side):  # the calls ask for the current stream
            self._graph = DriverGraph(body, int(self._side.cuda_stream))

    def replay(self) -> None:
        self._graph.launch(int(self._torch.cuda.current_stream().cuda_stream))

    def close(self) -> None:
        self._graph.close()
