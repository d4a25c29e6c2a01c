"""Kernel durations from CUPTI's activity records (through torch.profiler): what a call's
kernels took on the GPU, summed, without the launch and event overhead CUDA events put
around them; nsys reports the same durations, ncu the same quantity per kernel
(`gpu__time_duration`, plus a microsecond or so of its own).

`CuptiTimer` takes isolated samples only (ADR 0048): the isolated event timer's (an idle
gap, the L2 flush, the call alone on the GPU, as ncu runs a kernel), each call inside a
profiler range. The records arrive only when the profiler stops, so the stop rule reads
the events, and the samples kept are the kernel durations of the same calls. Where the
profiler records nothing usable (no CUPTI, another profiler running), the measurement
keeps the events' samples, says why, and is named `event`.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing.base import Measurement
from kernbench.timing.cuda import EventTimer
from kernbench.units import counted

SAMPLE_RANGE = "kernbench::sample"  # the host range each timed call runs inside
# Device records that are a call's own work (not annotations spanning it).
DEVICE_WORK = ("kernel", "gpu_memcpy", "gpu_memset")
# The span a host range's work covered on the GPU, as the profiler records it.
DEVICE_SPAN = "gpu_user_annotation"


@dataclass(frozen=True)
class Activity:
    """What the parser needs of one profiler record."""

    name: str
    kind: str  # "kernel", "gpu_memset", "gpu_user_annotation" ... on the device
    on_device: bool
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class SampleRecord:
    seconds: float  # the device work of one sample range, summed
    activities: int


def sample_records(activities: Iterable[Activity], range_name: str = SAMPLE_RANGE
                   ) -> list[SampleRecord]:
    """Per sample range, in order: the device work inside the span its calls covered on
    the GPU. The span, not a link from each kernel to the host op that launched it: a
    Triton kernel or a raw CUDA launch has no op to link to (on an H200 with torch 2.11,
    no Triton kernel was linked to its range; every one lay inside its range's span)."""
    activities = list(activities)
    spans = sorted((a for a in activities if a.on_device and a.kind == DEVICE_SPAN
                    and a.name == range_name), key=lambda a: a.start_ns)
    starts = [span.start_ns for span in spans]
    seconds, counts = [0.0] * len(spans), [0] * len(spans)
    for work in activities:
        if not work.on_device or work.kind not in DEVICE_WORK:
            continue
        i = bisect.bisect_right(starts, work.start_ns) - 1
        if i >= 0 and work.end_ns <= spans[i].end_ns:
            seconds[i] += (work.end_ns - work.start_ns) * 1e-9
            counts[i] += 1
    return [SampleRecord(s, c) for s, c in zip(seconds, counts, strict=True)]


def kernel_seconds(records: list[SampleRecord], samples: int) -> list[float]:
    """The kernel durations of `samples` timed calls, or ValueError saying why the
    records cannot stand for them."""
    if len(records) != samples:
        raise ValueError(f"{counted(len(records), 'sample span')} on the GPU for "
                         f"{counted(samples, 'sample')}")
    empty = sum(r.activities == 0 for r in records)
    if empty:
        raise ValueError(f"no device work recorded in {empty} of "
                         f"{counted(samples, 'sample span')}")
    return [r.seconds for r in records]


class KernelRecords:
    """A torch.profiler session recording CPU ranges and CUDA activity; `overhead_s`: what
    starting, stopping and reading it cost the host."""

    def __init__(self) -> None:
        self._profile: Any = None
        self._record: Any = None
        self.overhead_s = 0.0

    def __enter__(self) -> KernelRecords:
        import torch.profiler as profiler  # lazy: torch is optional

        began = time.perf_counter()
        self._record = profiler.record_function
        wanted = (profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA)
        supported = profiler.supported_activities()
        self._profile = profiler.profile(activities=[a for a in wanted if a in supported])
        self._profile.__enter__()
        self.overhead_s += time.perf_counter() - began
        return self

    def __exit__(self, *exc: object) -> None:
        began = time.perf_counter()
        self._profile.__exit__(None, None, None)
        self.overhead_s += time.perf_counter() - began

    @contextlib.contextmanager
    def sample(self) -> Iterator[None]:
        with self._record(SAMPLE_RANGE):
            yield

    def activities(self) -> list[Activity]:
        from torch.autograd import DeviceType

        began = time.perf_counter()
        found = []
        for e in self._profile.profiler.kineto_results.events():
            on_device = e.device_type() != DeviceType.CPU
            found.append(Activity(e.name(), activity_kind(e, on_device), on_device,
                                  e.start_ns(), e.end_ns()))
        self.overhead_s += time.perf_counter() - began
        return found


class Unrecorded:
    """In place of records that would not start: the samples run unrecorded, and reading
    the records says why."""

    overhead_s = 0.0

    def __init__(self, why: str) -> None:
        self.why = why

    def sample(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def __exit__(self, *exc: object) -> None:
        pass

    def activities(self) -> list[Activity]:
        raise RuntimeError(f"the profiler did not start: {self.why}")


def start_records(make: Callable[[], Any]) -> Any:
    try:
        return make().__enter__()
    except Exception as exc:  # noqa: BLE001 - another profiler running, no CUPTI, ...
        return Unrecorded(f"{type(exc).__name__}: {exc}")


def activity_kind(event: Any, on_device: bool) -> str:
    """A profiler record's activity type ("kernel", "gpu_memset", "gpu_user_annotation",
    ...). torch before 2.12 does not give it: there every device record but an annotation
    (a range's span on the GPU) is work."""
    if hasattr(event, "activity_type"):
        return str(event.activity_type()).lower()
    if getattr(event, "is_user_annotation", lambda: False)():
        return "gpu_user_annotation" if on_device else "user_annotation"
    return "kernel" if on_device else "cpu_op"


@functools.cache
def available() -> bool:
    """Whether torch.profiler can record CUDA activity here (kineto built with CUPTI)."""
    try:
        import torch.profiler as profiler

        return profiler.ProfilerActivity.CUDA in profiler.supported_activities()
    except Exception:  # noqa: BLE001 - any failure means: not here
        return False


def chosen_for(duty: str, staged: bool = False) -> bool:
    """Whether `auto` times samples by CUPTI's records (ADR 0048): isolated ones, of a
    kernel that does not synchronize inside (staged), where the profiler records CUDA."""
    return duty == "isolated" and not staged and available()


class CuptiTimer:
    """Isolated samples timed by CUPTI's kernel records (module docstring)."""

    name = "cupti"

    def __init__(
        self,
        device: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        records: Callable[[], Any] = KernelRecords,
    ) -> None:
        self._events = EventTimer(device, sleep=sleep)
        self._records = records

    def measure(self, kernel: Kernel, spec: TimerSpec) -> Measurement:
        if spec.duty != "isolated":
            raise ValueError("the cupti timer takes isolated samples only (timer.duty)")
        records = start_records(self._records)
        try:
            measured = self._events.measure(kernel, spec, around=records.sample)
        finally:
            records.__exit__(None, None, None)
        try:
            found = sample_records(records.activities())
            kernel_s = kernel_seconds(found, len(measured.samples_s))
        except Exception as exc:  # noqa: BLE001 - the events' samples still stand
            measured.extra["kernel_records_failed"] = f"{type(exc).__name__}: {exc}"[:300]
            return measured
        measured.extra.update(
            event_median_s=statistics.median(measured.samples_s),
            kernels_per_sample=statistics.median(r.activities for r in found),
            records_overhead_s=records.overhead_s,
        )
        # Isolated samples are one a block: each block's median is its sample.
        measured.blocks = [{**block, "median_s": s}
                           for block, s in zip(measured.blocks, kernel_s, strict=True)]
        measured.samples_s = kernel_s
        measured.timer = self.name
        return measured
