"""`kernbench calibrate`: measure this machine's ceilings and write a hardware profile.

Measured figures are written beside the datasheet's, never over them: the models use the
measured one where there is one, and a reader can see how far the card is from its
datasheet. CUDA: GEMMs per dtype through cuBLAS (cold L2, random data), sampled as a
sweep samples its cells, in rounds and turns (`calibrate_rounds`), under a bench's timer;
a device-to-device copy (bytes read + written), pinned host<->device copies each way.
CPU: numpy GEMM (fp32, fp64) and a memory copy (read + write).
"""

from __future__ import annotations

import datetime as dt
import platform
import random
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from kernbench.analyze.collective import GB
from kernbench.analyze.metrics import TFLOP
from kernbench.execute.calibrate_rounds import Candidate, best_rates, peaks_by_dtype
from kernbench.kernels import gemm_cuda
from kernbench.kernels.base import Kernel
from kernbench.results import atomic
from kernbench.results.outpaths import out_file
from kernbench.results.provenance import cpu_model
from kernbench.spec.fields import Scalar
from kernbench.spec.models import Ceiling, HardwareProfile
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import Measurement, choose_timer

MODELINE = "# yaml-language-server: $schema=../../schemas/hardware.schema.json\n"
# A sweep cell's timer, as milestone-1h-gemm's (tests/test_calibrate.py holds them equal).
SWEEP_TIMER = TimerSpec(warmup_s=0.05, budget_s=0.3, min_time_s=0.2, rel_ci=0.01,
                        min_samples=5, turns=4)
# The copies are one rate each, not a best of candidates: long samples, no turns.
COPY_TIMER = TimerSpec(warmup_s=0.2, budget_s=2.0, min_samples=10, rel_ci=0.005)


@dataclass(frozen=True)
class Sizes:
    gemm: int = 8192  # M = N = K of the CUDA GEMMs
    cpu_gemm: int = 2048
    copy_bytes: int = 2 << 30  # device-to-device copy, each buffer
    host_bytes: int = 1 << 30  # host<->device copies, each direction
    cpu_copy_bytes: int = 256 << 20
    reps: int = 10  # timed repetitions (CPU) / minimum samples of the CUDA copies
    # How the CUDA GEMMs are sampled: a bench's utilization is read against ceilings taken
    # the way its own cells are (its duty, ADR 0036 addendum; its warm-up, budget and
    # turns, ADR 0049). `kernbench calibrate --bench NAME` passes that bench's timer.
    timer: TimerSpec = field(default_factory=lambda: SWEEP_TIMER)
    rounds: int = 3
    seed: int = 0

    @property
    def duty(self) -> str:
        return self.timer.duty


@dataclass
class Measured:
    """What one calibration read off the machine (rates in TFLOP/s and GB/s)."""

    device_name: str
    kind: str
    peak_tflops: dict[str, float]
    memory_gbs: float
    host_to_device_gbs: float | None = None
    device_to_host_gbs: float | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    method: str = ""
    notes: dict[str, Scalar] = field(default_factory=dict)


def calibrate(
    device: str,
    name: str | None = None,
    datasheet: HardwareProfile | None = None,
    sizes: Sizes | None = None,
    measure: Callable[[Sizes], Measured] | None = None,
    duty: str | None = None,
) -> HardwareProfile:
    """Measure `device` ("cpu" or "cuda") and return its profile; `datasheet` supplies the
    datasheet figures, name, description and match strings kept beside the measured ones.
    `duty`: the timer duty the CUDA ceilings are sampled under (default: `sizes`' timer's).
    `measure` replaces the measurement (tests)."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; known: cpu, cuda")
    sizes = sizes or Sizes()
    if duty is not None:
        sizes = replace(sizes, timer=sizes.timer.model_copy(update={"duty": duty}))
    if measure is None:
        measure = measure_cuda if device == "cuda" else measure_cpu
    return profile_from(measure(sizes), name=name, datasheet=datasheet)


def profile_from(
    measured: Measured,
    name: str | None = None,
    datasheet: HardwareProfile | None = None,
    now: dt.datetime | None = None,
) -> HardwareProfile:
    """The measured figures beside the datasheet's (a datasheet's old measured values are
    replaced, its datasheet values kept)."""
    sheet = datasheet
    peaks: dict[str, Ceiling] = {}
    dtypes = list(sheet.peak_tflops) if sheet else []
    dtypes += [d for d in measured.peak_tflops if d not in dtypes]
    for dtype in dtypes:
        old = sheet.peak_tflops.get(dtype) if sheet else None
        peaks[dtype] = _ceiling(old, measured.peak_tflops.get(dtype))
    calibration: dict[str, Scalar] = {
        "date": (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device_name": measured.device_name,
        "host": platform.node(),
        "method": measured.method,
        **measured.notes,
    }
    return HardwareProfile(
        name=name or (sheet.name if sheet else slug(measured.device_name)),
        description=sheet.description if sheet else f"{measured.device_name}, measured",
        kind=measured.kind,
        match=list(sheet.match) if sheet and sheet.match else [measured.device_name],
        peak_tflops=peaks,
        memory_gbs=_ceiling(sheet.memory_gbs if sheet else None, measured.memory_gbs),
        host_to_device_gbs=_optional(
            sheet.host_to_device_gbs if sheet else None, measured.host_to_device_gbs
        ),
        device_to_host_gbs=_optional(
            sheet.device_to_host_gbs if sheet else None, measured.device_to_host_gbs
        ),
        interconnect_gbs=sheet.interconnect_gbs if sheet else None,
        l2_bytes=measured.l2_bytes or (sheet.l2_bytes if sheet else None),
        memory_bytes=measured.memory_bytes or (sheet.memory_bytes if sheet else None),
        calibration=calibration,
    )


def _ceiling(old: Ceiling | None, measured: float | None) -> Ceiling:
    return Ceiling(
        datasheet=old.datasheet if old else None,
        measured=measured if measured is not None else (old.measured if old else None),
    )


def _optional(old: Ceiling | None, measured: float | None) -> Ceiling | None:
    if old is None and measured is None:
        return None
    return _ceiling(old, measured)


def slug(text: str) -> str:
    """A profile name from a device name: "NVIDIA H200" -> "nvidia-h200"."""
    value = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return value[:80] or "device"


def write_profile(profile: HardwareProfile, path: Path) -> None:
    """The profile as YAML, with the schema modeline editors read."""
    data = profile.model_dump(mode="json", exclude_none=True)
    path = out_file(path)
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    atomic.write_text(path, MODELINE + text)


def _median_seconds(run: Callable[[], object], reps: int, sync: Callable[[], None]) -> float:
    run()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_cpu(sizes: Sizes) -> Measured:
    rng = np.random.default_rng()
    n = sizes.cpu_gemm
    peaks = {}
    for dtype, np_dtype in (("fp32", np.float32), ("fp64", np.float64)):
        a = rng.standard_normal((n, n)).astype(np_dtype)
        b = rng.standard_normal((n, n)).astype(np_dtype)
        c = np.empty((n, n), dtype=np_dtype)
        seconds = _median_seconds(partial(np.matmul, a, b, out=c), sizes.reps, _none)
        peaks[dtype] = 2.0 * n**3 / seconds / TFLOP
    count = sizes.cpu_copy_bytes // 8
    src = rng.standard_normal(count)
    dst = np.empty_like(src)
    seconds = _median_seconds(lambda: np.copyto(dst, src), sizes.reps, _none)
    return Measured(
        device_name=cpu_model(),
        kind="cpu",
        peak_tflops=peaks,
        memory_gbs=2.0 * src.nbytes / seconds / GB,
        method=(
            f"numpy matmul {n}^3 and np.copyto of {src.nbytes >> 20} MiB (read + write), "
            f"median of {sizes.reps} after one warm-up call"
        ),
        notes={"numpy": np.__version__},
    )


def _copy_gbs(
    median_s: Callable[[Any], float],
    source: str,
    target: str,
    nbytes: int,
    read_and_write: bool = False,
) -> float:
    """GB/s of copying `nbytes` from `source` to `target` memory ("cpu" is pinned host
    memory); a device copy counts bytes read plus bytes written."""
    import torch

    def buffer(where: str) -> Any:
        if where == "cpu":
            return torch.empty(nbytes // 4).pin_memory()
        return torch.empty(nbytes // 4, device=where)

    src, dst = buffer(source), buffer(target)
    src.normal_()
    seconds = median_s(Kernel(run=lambda: dst.copy_(src, non_blocking=True)))
    return (2 if read_and_write else 1) * src.nbytes / seconds / GB


def _none() -> None:
    return None


TIMED_BY = {"event": "CUDA events", "cupti": "CUPTI's kernel records"}


def gemm_candidates(n: int) -> list[tuple[int, int, int]]:
    """M, N, K of the GEMMs a ceiling is the best of.

    One shape alone can land on a weaker cuBLAS kernel (fp16 8192^3 read 670 TFLOP/s where
    8192x1024x8192 gave 763), the largest is where fp32 peaks (16384^3 read 104% of an
    8192^3 ceiling), and the LLM projections ran cuBLAS 2-4% above all four on an H200
    under the isolated duty: MLP up (M=2048, N=14336, K=4096 at n=8192) and MLP down
    (M=2048, N=4096, K=14336)."""
    return [(n, n, n), (n // 2, n // 2, n // 2), (n, n // 8, n), (2 * n, 2 * n, 2 * n),
            (n // 4, 7 * n // 4, n // 2), (n // 4, n // 2, 7 * n // 4)]


def measure_cuda(sizes: Sizes) -> Measured:
    import torch

    spec = sizes.timer.model_copy(update={"l2": "cold"})
    used: set[str] = set()  # the timers that took the samples (cupti may fall back)

    def measured_by(kernel: Kernel, visit: TimerSpec, chosen: str | None = None) -> Measurement:
        measured = choose_timer(kernel, visit, "cuda", chosen).measure(kernel, visit)
        used.add(measured.timer)
        return measured

    # A candidate is timed as a worker times a cell's turns: by the timer `choose_timer`
    # gives it, then by the one its first visit was taken with (the candidates live on
    # through the rounds, so their ids stay theirs).
    first_timer: dict[int, str] = {}

    def samples_of(kernel: Kernel, visit: TimerSpec) -> list[float]:
        measured = measured_by(kernel, visit, first_timer.get(id(kernel)))
        first_timer.setdefault(id(kernel), measured.timer)
        return measured.samples_s

    copies = COPY_TIMER.model_copy(update={"duty": spec.duty, "min_samples": sizes.reps})

    def median_s(kernel: Kernel) -> float:
        return statistics.median(measured_by(kernel, copies).samples_s)

    n = sizes.gemm
    notes: dict[str, Scalar] = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
                                "duty": spec.duty, "rounds": sizes.rounds, "turns": spec.turns}
    if spec.duty == "sustained":  # the settle phase each visit starts with (ADR 0053)
        notes["settle_min_s"] = spec.settle_min_s
    candidates: list[tuple[Candidate, Kernel]] = []
    for dtype in gemm_cuda.DTYPES:
        for m, k_n, k in gemm_candidates(n):
            try:
                kernel = gemm_cuda.make(M=m, N=k_n, K=k, dtype=dtype)
            except RuntimeError as exc:  # fp8 where the GPU or torch lacks it
                notes[f"{dtype}_skipped"] = str(exc)
                break
            candidates.append((Candidate(dtype, m, k_n, k), kernel))
    rates = best_rates(candidates, samples_of, spec, sizes.rounds, random.Random(sizes.seed))
    peaks = peaks_by_dtype(rates)
    del candidates
    torch.cuda.empty_cache()

    device_gbs = _copy_gbs(median_s, "cuda", "cuda", sizes.copy_bytes, read_and_write=True)
    h2d = _copy_gbs(median_s, "cpu", "cuda", sizes.host_bytes)
    d2h = _copy_gbs(median_s, "cuda", "cpu", sizes.host_bytes)
    torch.cuda.empty_cache()

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    notes["timer"] = ", ".join(sorted(used))
    timed_by = " and ".join(TIMED_BY.get(name, name) for name in sorted(used))
    return Measured(
        device_name=props.name,
        kind="cuda",
        peak_tflops=peaks,
        memory_gbs=device_gbs,
        host_to_device_gbs=h2d,
        device_to_host_gbs=d2h,
        l2_bytes=int(props.L2_cache_size),
        memory_bytes=int(props.total_memory),
        method=(
            f"cuBLAS GEMM per dtype, best of {n}^3, {n // 2}^3, {n}x{n // 8}x{n}, "
            f"{2 * n}^3, M={n // 4} N={7 * n // 4} K={n // 2} and M={n // 4} N={n // 2} "
            f"K={7 * n // 4} (fp8: torch._scaled_mm), random data, each the best of "
            f"{sizes.rounds} rounds in {spec.turns} turns (a round's median; warm-up "
            f"{spec.warmup_s:g} s, budget {spec.budget_s:g} s, at least {spec.min_time_s:g} s "
            f"a round); device copy of {sizes.copy_bytes >> 20} MiB (read + write); pinned "
            f"host copies of {sizes.host_bytes >> 20} MiB each way; {timed_by}, L2 flushed, "
            f"{spec.duty} duty"
        ),
        notes=notes,
    )
