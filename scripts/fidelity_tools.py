"""The fidelity page's tools, each `Tools.run(name, kernel)`: kernbench's timers (with its
read flush, or do_bench's write flush), triton's do_bench and a rebuild of its loop, each
behind the same precondition, with the SM clock read on a thread while it runs
(`ClockSampler`). torch and triton are imported as a `Tools` is built."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

DO_BENCH_FLUSH_BYTES = 256 << 20  # triton's get_empty_cache_for_benchmark (int32)
DO_BENCH_MS = {"warmup": 25, "rep": 100}
SPEC = {"warmup_s": 0.025, "budget_s": 0.1, "min_samples": 20, "rel_ci": 1e-4, "l2": "cold"}
CLOCK_PERIOD_S = 0.005
ISOLATED_TOOLS = ("isolated_read", "isolated_cupti", "isolated_cupti_10ms",
                  "isolated_cupti_50ms")
# Before each tool: this long of the write flush and the kernel back to back (a sustained
# tool), or idle (an isolated one). Until the tenth session a tool inherited the state the
# tool before it left: in reversed repetitions event_write followed isolated_read's idle
# gaps and read power-capped cells at 1965 MHz, do_bench always followed a sustained tool.
PRECONDITION_S = 0.2
# ... and before that, this long idle. The card's power state remembers about a second of
# load: held on, a capped GEMM slows by ~10% after ~0.8 s, and a short idle gap starts
# that count again (scripts/sustained_series.py, docs/steady/series-*). With
# the load phase alone, the tools' preconditions joined into one long load, so whichever
# tool sat ~0.8 s into it (do_bench, in both orders of the page) read slowest.
PRECONDITION_IDLE_S = 0.5
# What a measurement's extra says that the page reads: the sustained batches' gaps
# (timing.sampling.AheadPace.gaps) and the CUPTI timer's records (timing.cupti).
EXTRA_KEPT = ("between_batches_s", "max_between_batches_s", "batches_found_gpu_idle",
              "batches_past_hold",
              "event_median_s", "kernels_per_sample", "records_overhead_s",
              "kernel_records_failed")


class ClockSampler:
    """Reads the SM clock every `period` s on a thread while a tool runs; `times` holds each
    reading's wall time in seconds from the first."""

    def __init__(self, read: Callable[[], Any], period: float = CLOCK_PERIOD_S) -> None:
        self._read, self._period = read, period
        self.readings: list[Any] = []
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        started = time.perf_counter()
        while not self._stop.is_set():
            reading = self._read()
            if reading is not None:
                self.readings.append(reading)
                self.times.append(time.perf_counter() - started)
            self._stop.wait(self._period)

    def __enter__(self) -> ClockSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def by_clock(samples_s: Sequence[float], clocks: Sequence[float]) -> dict[str, list[float]]:
    """{SM MHz: [median seconds, count]} of the samples read at each clock."""
    groups: dict[float, list[float]] = {}
    for seconds, mhz in zip(samples_s, clocks, strict=False):
        groups.setdefault(mhz, []).append(seconds)
    return {f"{mhz:.0f}": [statistics.median(v), len(v)] for mhz, v in sorted(groups.items())}


class Tools:
    """The tools, each `run(name, kernel) -> {median_s, n, ...}` on one shared set of devices."""

    def __init__(self) -> None:
        import torch
        import triton.testing

        from kernbench.spec.timer_model import TimerSpec
        from kernbench.timing.cuda_device import CudaDevice

        self.torch = torch
        self.testing = triton.testing
        self.spec = TimerSpec(**SPEC)
        self.read_device = CudaDevice(flush="read")
        self.write_device = CudaDevice(flush="write", flush_size=DO_BENCH_FLUSH_BYTES)
        self.side = torch.cuda.Stream()
        self.preconditioned = True

    def precondition(self, tool: str, kernel: Any) -> None:
        """The same state before every tool of a kind: PRECONDITION_IDLE_S idle, then (not
        before an isolated tool) PRECONDITION_S of do_bench's flush and the kernel back to
        back."""
        self.torch.cuda.synchronize()
        time.sleep(PRECONDITION_IDLE_S)
        if tool in ISOLATED_TOOLS:
            return
        device, deadline = self.write_device, time.perf_counter() + PRECONDITION_S
        while time.perf_counter() < deadline:
            for _ in range(8):  # a short queue, so the phase ends near its deadline
                device.flush()
                kernel.run()
            self.torch.cuda.synchronize()

    def run(self, tool: str, kernel: Any) -> dict[str, Any]:
        if self.preconditioned:
            self.precondition(tool, kernel)
        with ClockSampler(self.read_device.read_clock) as clock:
            row = getattr(self, tool)(kernel)
        mhz = [r.sm_clock_mhz for r in clock.readings]
        row["clock_mhz"] = statistics.median(mhz) if mhz else None
        row["throttled"] = sum(r.throttled for r in clock.readings) / len(mhz) if mhz else None
        return row

    def _timer(self, timer: Any, kernel: Any, **update: Any) -> dict[str, Any]:
        spec = self.spec.model_copy(update=update) if update else self.spec
        measured = timer.measure(kernel, spec)
        return {
            "median_s": statistics.median(measured.samples_s),
            "n": len(measured.samples_s),
            "timer": measured.timer,
            "by_clock": by_clock(measured.samples_s, measured.sm_clock_mhz),
            "launches_per_graph": measured.extra.get("launches_per_graph"),
            **{key: measured.extra[key] for key in EXTRA_KEPT if key in measured.extra},
        }

    def event_read(self, kernel: Any) -> dict[str, Any]:
        from kernbench.timing.cuda import EventTimer

        return self._timer(EventTimer(self.read_device), kernel)

    def event_write(self, kernel: Any) -> dict[str, Any]:
        from kernbench.timing.cuda import EventTimer

        return self._timer(EventTimer(self.write_device), kernel)

    def event_write_unsettled(self, kernel: Any) -> dict[str, Any]:
        from kernbench.timing.cuda import EventTimer

        return self._timer(EventTimer(self.write_device), kernel, settle_s=0.0)

    def event_write_deep(self, kernel: Any) -> dict[str, Any]:
        """event_write with batches of up to 512 samples: the host as far ahead of the GPU
        as do_bench's (which queues all its samples at once), not one batch of 32."""
        from kernbench.timing import cuda

        kept = cuda.MAX_BATCH
        cuda.MAX_BATCH = 512
        try:
            return self._timer(cuda.EventTimer(self.write_device), kernel)
        finally:
            cuda.MAX_BATCH = kept

    def event_write_burst(self, kernel: Any) -> dict[str, Any]:
        """event_write behind do_bench's warm-up (its own calls back to back, no flush, for
        do_bench's warmup ms) instead of kernbench's (a sync after each call)."""
        from kernbench.timing.cuda import EventTimer

        burst(kernel, DO_BENCH_MS["warmup"] * 1e-3)
        return self._timer(EventTimer(self.write_device), kernel, warmup_s=0.0)

    def loop_write_synced_warmup(self, kernel: Any) -> dict[str, Any]:
        """loop_write with kernbench's warm-up (a sync after each call) in place of its own."""
        from kernbench.timing.sampling import warm_up

        warm_up(kernel.run, self.torch.cuda.synchronize, DO_BENCH_MS["warmup"] * 1e-3)
        return self.loop_write(kernel, warm=False)

    def loop_write(self, kernel: Any, warm: bool = True, keep_samples: bool = False
                   ) -> dict[str, Any]:
        """do_bench's loop: calls for `rep` ms as five calls estimate them, each behind the
        write flush, between its own pair of events, all queued, one sync at the end;
        `warm`: behind do_bench's warm-up (calls back to back for `warmup` ms);
        `keep_samples`: the samples in order too (scripts/sustained_series.py)."""
        torch, device = self.torch, self.write_device
        device.prepare(True)

        def timed(calls: int) -> list[float]:
            pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(calls)]
            queue_flushed(device, kernel, pairs)
            torch.cuda.synchronize()
            gaps.extend(a[1].elapsed_time(b[0]) * 1e-3
                        for a, b in zip(pairs, pairs[1:], strict=False))
            return [start.elapsed_time(end) * 1e-3 for start, end in pairs]

        gaps: list[float] = []
        estimate_s = statistics.mean(timed(5))
        if warm:
            for _ in range(max(1, int(DO_BENCH_MS["warmup"] * 1e-3 / estimate_s))):
                kernel.run()
        gaps.clear()
        samples = timed(max(1, int(DO_BENCH_MS["rep"] * 1e-3 / estimate_s)))
        # What separates two of its samples on the GPU: its flush, or more.
        between = statistics.median(gaps) if gaps else None
        found = {"median_s": statistics.median(samples), "n": len(samples),
                 "between_samples_s": between}
        return {**found, "samples_s": samples} if keep_samples else found

    def isolated_read(self, kernel: Any) -> dict[str, Any]:
        from kernbench.timing.cuda import EventTimer

        return self._timer(EventTimer(self.read_device), kernel, duty="isolated")

    def isolated_cupti(self, kernel: Any) -> dict[str, Any]:
        from kernbench.timing.cupti import CuptiTimer

        return self._timer(CuptiTimer(self.read_device), kernel, duty="isolated")

    def isolated_cupti_10ms(self, kernel: Any) -> dict[str, Any]:
        """isolated_cupti with at least 10 ms idle before each sample (2 ms by default)."""
        return self._isolated_gap(kernel, 0.01)

    def isolated_cupti_50ms(self, kernel: Any) -> dict[str, Any]:
        """isolated_cupti with 50 ms idle before each sample: nearer ncu's own gaps
        between the launches it profiles."""
        return self._isolated_gap(kernel, 0.05)

    def _isolated_gap(self, kernel: Any, seconds: float) -> dict[str, Any]:
        from kernbench.timing import steady

        kept = steady.ISOLATED_GAP_S
        steady.ISOLATED_GAP_S = seconds
        try:
            return self.isolated_cupti(kernel)
        finally:
            steady.ISOLATED_GAP_S = kept

    def graph_read(self, kernel: Any) -> dict[str, Any]:
        from kernbench.timing.cuda import GraphTimer

        return self._timer(GraphTimer(self.read_device), kernel)

    def graph_warm(self, kernel: Any) -> dict[str, Any]:
        from kernbench.timing.cuda import GraphTimer

        return self._timer(GraphTimer(self.read_device), kernel, l2="warm")

    def do_bench(self, kernel: Any) -> dict[str, Any]:
        ms = self.testing.do_bench(kernel.run, return_mode="median", **DO_BENCH_MS)
        return {"median_s": ms * 1e-3}

    def do_bench_again(self, kernel: Any) -> dict[str, Any]:
        """do_bench a second time in each repetition: how well do_bench agrees with itself
        in the same state, the floor under any "within 1% of do_bench"."""
        return self.do_bench(kernel)

    def do_bench_nowarmup(self, kernel: Any) -> dict[str, Any]:
        """do_bench without its warm-up (one call): its samples start from the state the
        precondition left, not from the one its calls back to back without a flush leave,
        which its first samples spend tens of milliseconds leaving (sustained_series)."""
        ms = self.testing.do_bench(kernel.run, return_mode="median", warmup=0,
                                   rep=DO_BENCH_MS["rep"])
        return {"median_s": ms * 1e-3}

    def do_bench_settled(self, kernel: Any) -> dict[str, Any]:
        """do_bench right after settle_s of the write flush and the kernel back to back, the
        state kernbench's settle phase leaves the card in."""
        device, deadline = self.write_device, time.perf_counter() + self.spec.settle_s
        while time.perf_counter() < deadline:
            for _ in range(8):  # a short queue, so the phase ends near its deadline
                device.flush()
                kernel.run()
            self.torch.cuda.synchronize()
        return self.do_bench(kernel)

    def do_bench_long(self, kernel: Any) -> dict[str, Any]:
        """do_bench sampling as long as kernbench's settle and budget together."""
        rep_ms = 1e3 * (self.spec.settle_s + self.spec.budget_s)
        ms = self.testing.do_bench(kernel.run, return_mode="median",
                                   warmup=DO_BENCH_MS["warmup"], rep=rep_ms)
        return {"median_s": ms * 1e-3}

    def do_bench_cudagraph(self, kernel: Any) -> dict[str, Any]:
        with self.torch.cuda.stream(self.side):  # it refuses to capture on the default stream
            ms = self.testing.do_bench_cudagraph(kernel.run, return_mode="median")
        return {"median_s": ms * 1e-3}


def queue_flushed(device: Any, kernel: Any, pairs: Sequence[tuple[Any, Any]]) -> None:
    """Queue one call between each pair of events, each behind the device's flush (do_bench's
    loop), without waiting for any."""
    for start, end in pairs:
        device.flush()
        start.record()
        kernel.run()
        end.record()


def burst(kernel: Any, seconds: float) -> None:
    """The kernel back to back, no flush, for about `seconds` (do_bench's warm-up)."""
    import torch

    kernel.run()
    torch.cuda.synchronize()
    started = time.perf_counter()
    kernel.run()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - started, 1e-6)
    for _ in range(max(1, int(seconds / one))):
        kernel.run()
    torch.cuda.synchronize()


def warm(kernel: Any, seconds: float = 0.2) -> None:
    """Run the case alone for a while, so the first tool does not meet an idle card."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        kernel.run()
        kernel.synchronize()
