"""Timer fidelity: kernbench's CUDA timers against triton.testing.do_bench and Nsight Compute.

In one process, each case is timed by several tools, interleaved: `--reps` repetitions of
[kernbench event timer with its read flush, the same timer with do_bench's write flush,
kernbench graph timer, do_bench], the order reversed every other repetition, each tool a
short run (~0.1 s of samples) so all see the same power and clock state. A thread reads
the SM clock (NVML) every few ms while each tool runs. Each tool's number is the median
of its repetition medians; each ratio comes with its per-repetition spread.

The flushes: kernbench "read" sums a buffer of 2x L2 (clean lines); do_bench zero-fills
256 MiB (dirty lines, written back inside the next kernel); kernbench "write" zero-fills
the same 256 MiB, so event-write vs do_bench compares the timers alone. ncu (run after,
in a child process) times isolated launches, flushing caches (--cache-control all) or not
(none), never touching clocks, and reads the SM clock each launch ran at.

    python3 scripts/fidelity.py --out fidelity.json   # also writes fidelity.md beside it
    python3 scripts/fidelity.py --render fidelity.json  # rebuild the .md from the JSON

This file measures; `fidelity_page.py` reads ncu's launches and writes the page, from
the JSON alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from fidelity_page import (  # noqa: E402 - the page, pure: rendered from the JSON alone
    EMPTY_CASE,
    NCU_CACHE,
    NCU_CALLS,
    NCU_CLOCK,
    NCU_TIME,
    parse_ncu_csv,
    rep_stats,
    write,
)

GEMM_SIZES = (1024, 2048, 4096, 8192)
EXTRA_GEMMS = ("gemm-bf16-4096x4096x1024", "gemm-fp16-4096")
ADD_ELEMENTS = 65536
REPS = 6
DO_BENCH_FLUSH_BYTES = 256 << 20  # triton's get_empty_cache_for_benchmark (int32)
DO_BENCH_MS = {"warmup": 25, "rep": 100}
SPEC = {"warmup_s": 0.025, "budget_s": 0.1, "min_samples": 20, "rel_ci": 1e-4, "l2": "cold"}
CLOCK_PERIOD_S = 0.005
NVTX_RANGE = "kernbench-fidelity"
# loop_write and event_write_unsettled bisect event_write against do_bench: do_bench's own
# loop with kernbench's flush and events, and kernbench's timer without its settle phase.
# do_bench_settled and do_bench_long ask whether the rest is the card's power history:
# do_bench behind the same back-to-back flush-and-run phase as kernbench's settle, and
# do_bench sampling over kernbench's whole window (settle and budget) instead of 100 ms.
# Since the tenth session every tool starts from the same state (`Tools.precondition`),
# which the bisecting tools above were groping for; they stay callable (--also), as do
# event_write_deep (the host as far ahead as do_bench's), event_write_burst (behind
# do_bench's warm-up) and loop_write_synced_warmup (behind kernbench's), which ask what
# still keeps event_write under do_bench on a power-capped card at the same clock.
GEMM_TOOLS = ("event_read", "event_write", "isolated_read", "isolated_cupti", "graph_read",
              "do_bench", "loop_write")
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
ADD_TOOLS = GEMM_TOOLS + ("graph_warm", "do_bench_cudagraph")


# -- cases -----------------------------------------------------------------------------------


def cases(sizes: Sequence[int], extra: Iterable[str] = EXTRA_GEMMS) -> list[str]:
    return [f"gemm-bf16-{n}" for n in sizes] + list(extra) + [f"add-{ADD_ELEMENTS}", EMPTY_CASE]


def parse_case(name: str) -> dict[str, Any]:
    """'gemm-bf16-4096' (M=N=K), 'gemm-bf16-4096x4096x1024' (MxNxK), 'add-65536' or
    'empty-0' (a kernel that returns at once: what events and launches add around any)."""
    kind, *rest = name.split("-")
    if name == EMPTY_CASE:
        return {"kind": "empty"}
    if kind == "add":
        return {"kind": "add", "elements": int(rest[0])}
    if kind != "gemm" or len(rest) != 2:
        raise ValueError(f"unknown case {name!r}")
    dims = [int(d) for d in rest[1].split("x")]
    m, n, k = dims * 3 if len(dims) == 1 else dims
    return {"kind": "gemm", "dtype": rest[0], "M": m, "N": n, "K": k}


def tools_for(name: str) -> tuple[str, ...]:
    return ADD_TOOLS if parse_case(name)["kind"] == "add" else GEMM_TOOLS


def order(rep: int, tools: Sequence[str]) -> list[str]:
    """Tools in order on even repetitions, reversed on odd ones."""
    return list(tools) if rep % 2 == 0 else list(reversed(tools))


def make_case(name: str) -> Any:
    import torch

    from kernbench.kernels import gemm_cuda
    from kernbench.kernels.base import Kernel

    case = parse_case(name)
    if case["kind"] == "gemm":
        return gemm_cuda.make(M=case["M"], N=case["N"], K=case["K"], dtype=case["dtype"])
    if case["kind"] == "empty":
        return Kernel(run=lambda: torch.cuda._sleep(0), synchronize=torch.cuda.synchronize)
    x = torch.randn(case["elements"], device="cuda")
    y = torch.randn(case["elements"], device="cuda")
    z = torch.empty_like(x)
    return Kernel(run=lambda: torch.add(x, y, out=z), synchronize=torch.cuda.synchronize)


# -- in-process measurement --------------------------------------------------------------------


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


def measure_case(tools: Tools, name: str, reps: int, also: Sequence[str] = ()) -> dict[str, Any]:
    from kernbench.timing import choose_timer

    kernel = make_case(name)
    check = kernel.check() if kernel.check else None
    auto = choose_timer(kernel, tools.spec.model_copy(update={"kind": "auto"}), "cuda").name
    warm(kernel)
    names = list(tools_for(name)) + [tool for tool in also if tool not in tools_for(name)]
    runs: dict[str, list[dict[str, Any]]] = {tool: [] for tool in names}
    errors: dict[str, str] = {}
    orders = []
    for rep in range(reps):
        orders.append(order(rep, names))
        for tool in orders[-1]:
            try:
                runs[tool].append(tools.run(tool, kernel))
            except Exception as exc:  # noqa: BLE001 - a tool that fails is left out, named
                errors[tool] = f"{type(exc).__name__}: {exc}"[:300]
                names.remove(tool)
                del runs[tool]
    medians = {tool: rep_stats([r["median_s"] for r in rows]) for tool, rows in runs.items()}
    return {
        "auto_timer": auto,
        "check_rel_err": check.rel_err if check else None,
        "orders": orders,
        "runs": runs,
        "tool_errors": errors,
        # read by scripts/gpu_smoke.py
        "event_median_s": medians.get("event_read", {}).get("median"),
        "do_bench_median_s": medians.get("do_bench", {}).get("median"),
    }


def measure(names: list[str], reps: int, also: Sequence[str] = (), preconditioned: bool = True
            ) -> dict[str, dict[str, Any]]:
    import torch

    tools = Tools()
    tools.preconditioned = preconditioned
    out = {}
    for name in names:
        started = time.perf_counter()
        try:
            out[name] = measure_case(tools, name, reps, also)
        except Exception as exc:  # noqa: BLE001 - one broken case must not cost the GPU call
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        torch.cuda.empty_cache()
        print(f"{name}: {time.perf_counter() - started:.1f} s", flush=True)
    return out


# -- ncu -------------------------------------------------------------------------------------


def child(names: list[str]) -> None:
    """Under ncu: per case, a marker kernel, then NCU_CALLS calls, inside one NVTX range."""
    import torch

    marker = torch.empty(1, device="cuda")
    kernels = [make_case(name) for name in names]
    for kernel in kernels:
        for _ in range(3):
            kernel.run()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    for kernel in kernels:
        marker.fill_(1.0)
        for _ in range(NCU_CALLS):
            kernel.run()
        torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def run_ncu(names: list[str], cache: str, timeout_s: float) -> dict[str, Any]:
    """ncu on a child process; without the clock metric if ncu refuses it."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"error": "ncu not on PATH"}
    found = ncu_once(ncu, names, cache, f"{NCU_TIME},{NCU_CLOCK}", timeout_s)
    if "error" in found and "took over" not in found["error"]:
        found = ncu_once(ncu, names, cache, NCU_TIME, timeout_s) | {"first_error": found["error"]}
    return found


def ncu_once(ncu: str, names: list[str], cache: str, metrics: str, timeout_s: float) -> dict:
    command = [
        ncu, "--clock-control", "none", "--cache-control", cache, "--metrics", metrics, "--csv",
        "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
        sys.executable, __file__, "--child", *names,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"ncu took over {timeout_s:.0f} s"}
    launches = parse_ncu_csv(done.stdout)
    if not launches:
        return {"error": f"no launches; rc {done.returncode}: {(done.stdout + done.stderr)[-600:]}"}
    return {"launches": launches, "metrics": metrics}


# -- provenance and main ----------------------------------------------------------------------


def provenance() -> dict[str, Any]:
    import torch
    import triton

    from kernbench.timing import nvml

    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": torch.cuda.get_device_name(),
        "driver": nvml.driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size,
        "flush": {
            "event_read, graph_read": "kernbench: sum of a buffer of 2x the device L2 "
            "before each sample (clean lines)",
            "event_write": f"kernbench with flush='write': zero_() of {DO_BENCH_FLUSH_BYTES} "
            "bytes before each sample (do_bench's flush)",
            "do_bench": f"cache.zero_() on {DO_BENCH_FLUSH_BYTES} bytes before each call (dirty "
            "lines)",
            "ncu all": "--cache-control all: caches flushed before each profiled launch",
            "ncu none": "--cache-control none: no flush",
            "graph_warm, do_bench_cudagraph": "no flush",
        },
    }


def settings(names: list[str], reps: int, precondition_s: float | None) -> dict[str, Any]:
    return {
        "cases": names,
        "reps": reps,
        "precondition_s": precondition_s,
        "precondition_idle_s": PRECONDITION_IDLE_S if precondition_s else None,
        "kernbench_spec": SPEC,
        "do_bench_ms": DO_BENCH_MS,
        "clock_period_s": CLOCK_PERIOD_S,
        "ncu_calls": NCU_CALLS,
        "ncu_metrics": [NCU_TIME, NCU_CLOCK],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("fidelity.json"))
    parser.add_argument("--sizes", type=int, nargs="*", default=list(GEMM_SIZES))
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--no-ncu", action="store_true")
    parser.add_argument("--ncu-timeout", type=float, default=120.0)
    parser.add_argument("--render", type=Path, help="rebuild the .md of this JSON and exit")
    parser.add_argument("--cases", nargs="*", help="only these cases (e.g. gemm-fp16-4096)")
    parser.add_argument("--also", nargs="*", default=[], help="more tools (Tools' methods)")
    parser.add_argument("--no-precondition", action="store_true",
                        help="each tool in the state the one before it left (before 12-01)")
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    if args.render is not None:
        import json

        print(write(args.render, json.loads(args.render.read_text())))
        return
    names = args.cases or cases(args.sizes)
    precondition_s = None if args.no_precondition else PRECONDITION_S
    data: dict[str, Any] = {"provenance": provenance(),
                            "settings": settings(names, args.reps, precondition_s)}
    data["cases"] = measure(names, args.reps, args.also, not args.no_precondition)
    data["ncu"] = {}
    for cache in NCU_CACHE:
        if args.no_ncu:
            data["ncu"][cache] = {"error": "skipped (--no-ncu)"}
            continue
        started = time.perf_counter()
        data["ncu"][cache] = run_ncu(names, cache, args.ncu_timeout)
        print(f"ncu {cache}: {time.perf_counter() - started:.1f} s", flush=True)
    print(write(args.out, data))


if __name__ == "__main__":
    main()
