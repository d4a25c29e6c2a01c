"""The GPU side of the CUDA timers: events, the L2 flush, holds, graphs, clock readings.

Everything that touches torch lives here, so the timers' arithmetic (`timing.cuda`) is
tested on the CPU with a fake device.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, Protocol

from kernbench.kernels import gpu_hold
from kernbench.kernels.backends import operators_replaced
from kernbench.timing.nvml import ClockReader, Reading

FLUSH_FACTOR = 2  # the flush buffer is this many times the L2
MIN_FLUSH_BYTES = 8 << 20
FLUSH_MODES = ("read", "write")


def flush_bytes(l2_bytes: int, factor: int = FLUSH_FACTOR) -> int:
    """Flush buffer size: `factor` times the L2, rounded up to a MiB, at least 8 MiB."""
    mib = 1 << 20
    wanted = max(int(l2_bytes) * factor, MIN_FLUSH_BYTES)
    return -(-wanted // mib) * mib


class Event(Protocol):
    def record(self) -> None: ...
    def elapsed_time(self, end: Any) -> float: ...  # milliseconds, as torch's


class CudaDevice:
    """The GPU side of the timers: events, L2 flush, synchronize, graphs, clock readings.

    flush: "read" (the default) sums a buffer; "write" zero-fills it, as do_bench does, for
    comparing with timers that flush that way. flush_size: the buffer's bytes, by default
    `flush_bytes(L2)`.
    """

    def __init__(
        self, index: int | None = None, flush: str = "read", flush_size: int | None = None
    ) -> None:
        import torch  # lazy: torch is optional, and the CPU path imports this module

        if flush not in FLUSH_MODES:
            raise ValueError(f"unknown flush {flush!r}; known: {', '.join(FLUSH_MODES)}")
        self._torch = torch
        self.index = torch.cuda.current_device() if index is None else index
        props = torch.cuda.get_device_properties(self.index)
        self.name = props.name
        self.l2_bytes = int(props.L2_cache_size)
        self.flush_mode = flush
        self.flush_size = int(flush_size) if flush_size else flush_bytes(self.l2_bytes)
        self._uuid = str(getattr(props, "uuid", "") or "")
        self._buffer: Any = None
        self._scratch: Any = None
        self._partials: Any = None
        self.flush_kernel = "torch"  # or "kernbench": the kernel of the last flush
        self._events: dict[int, list[tuple[Any, Any]]] = {}
        self._clock: ClockReader | None = None
        self.prepared: dict[str, Any] = {}

    def prepare(self, cold: bool = False) -> dict[str, Any]:
        """Once per measurement: return persisting L2 lines to normal (a memset or read
        flush does not evict lines held by a persisting access policy); `cold`: flush once
        now, so the buffer's allocation and the flush kernel's first load happen here and
        not inside the first batch's hold."""
        if cold:
            self.flush()
        self.synchronize()
        self.prepared = reset_persisting_l2()
        return self.prepared

    def events(self, n: int, slot: int = 0) -> list[tuple[Any, Any]]:
        """n (start, end) timing events from pool `slot`, reused between batches: a batch
        is synchronized before its slot is used again (the sustained duty keeps two
        batches queued, one per slot)."""
        pool = self._events.setdefault(slot, [])
        if len(pool) < n:
            make = self._torch.cuda.Event
            fresh = [
                (make(enable_timing=True), make(enable_timing=True)) for _ in range(n - len(pool))
            ]
            # torch creates the CUDA event at its first record: do that here, or the
            # creation's host time lands between a sample's two events. No sync after: it
            # would drain the batch queued ahead and idle the GPU (`timing.sampling`);
            # recording an event again before an earlier record completes is allowed.
            for start, end in fresh:
                start.record()
                end.record()
            pool.extend(fresh)
        return pool[:n]

    def flush(self) -> None:
        """Evict L2 by reading a buffer twice its size. A read leaves clean lines: a zero_()
        flush ("write") leaves dirty ones, whose write-back then lands inside the timed kernel.

        Where a backend has replaced torch's operators (FlagGems' scope is open), torch.sum
        and zero_() would run the backend's kernels (FlagGems' sum took 2.55 ms a flush on
        the H200, torch's 38 µs): there the flush is kernbench's own Triton kernel,
        eagerly and inside graphs alike."""
        torch = self._torch
        if self._buffer is None:  # its contents never matter: no kernel to fill it
            n = self.flush_size // 4
            self._buffer = torch.empty(n, dtype=torch.float32, device=self.index)
            self._scratch = torch.empty((), dtype=torch.float32, device=self.index)
        write = self.flush_mode == "write"
        self.flush_kernel = "kernbench" if operators_replaced() else "torch"
        if self.flush_kernel == "kernbench":
            from kernbench.kernels import flush_triton  # Triton: there with any such backend

            if self._partials is None:
                programs = flush_triton.programs(self._buffer.numel())
                self._partials = torch.empty(programs, dtype=torch.float32, device=self.index)
            flush_triton.flush(self._buffer, self._partials, write)
        elif write:
            self._buffer.zero_()
        else:
            torch.sum(self._buffer, dim=0, out=self._scratch)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self.index)

    def hold(self, seconds: float) -> None:
        """Keep the GPU busy for about `seconds` (a spinning kernel), so work the host
        enqueues meanwhile runs back to back, without launch gaps."""
        gpu_hold.hold(seconds)

    def capture(self, body: Callable[[], None]) -> Any:
        """A CUDA graph of `body`, warmed up on a side stream first as torch asks."""
        torch = self._torch
        side = torch.cuda.Stream(self.index)
        side.wait_stream(torch.cuda.current_stream(self.index))
        with torch.cuda.stream(side):
            body()
        torch.cuda.current_stream(self.index).wait_stream(side)
        self.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            body()
        self.synchronize()
        return graph

    def read_clock(self) -> Reading | None:
        if self._clock is None:
            self._clock = ClockReader(uuid=self._uuid or None, index=self.index)
        return self._clock.read()


def reset_persisting_l2() -> dict[str, Any]:
    """cuCtxResetPersistingL2Cache on the current context, through the driver library
    (torch exposes no binding). Returns what happened, for the measurement's `extra`."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"persisting_l2_reset": f"unavailable: {exc}"}
    rc = int(lib.cuCtxResetPersistingL2Cache())
    limit = ctypes.c_size_t(0)
    persisting_limit = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
    limit_rc = int(lib.cuCtxGetLimit(ctypes.byref(limit), persisting_limit))
    return {
        "persisting_l2_reset": "ok" if rc == 0 else f"CUresult {rc}",
        "persisting_l2_limit_bytes": int(limit.value) if limit_rc == 0 else None,
    }


def current_gpu_clock() -> Callable[[], Reading | None]:
    """The NVML reader of torch's current GPU, for a timer without a CudaDevice of its own
    (the ranks timer): the device is made at the first read, in the rank that reads."""
    devices: list[CudaDevice] = []

    def read() -> Reading | None:
        if not devices:
            devices.append(CudaDevice())
        return devices[0].read_clock()

    return read
