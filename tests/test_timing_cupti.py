"""The CUPTI timer's parsing and sampling on the CPU: fake records and a fake device, and
torch's real profiler where it can record no CUDA activity (the fallback)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from test_timing_cuda import Clock, FakeDevice, _kernel

from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import choose_timer, cuda, cupti
from kernbench.timing.cupti import SAMPLE_RANGE, Activity, SampleRecord

ISOLATED = TimerSpec(warmup_s=0.0, min_samples=5, max_samples=5, duty="isolated")


def host(name: str, start: int, end: int, kind: str = "cpu_op") -> Activity:
    return Activity(name, kind, False, start, end)


def device(name: str, start: int, end: int, kind: str = "kernel") -> Activity:
    return Activity(name, kind, True, start, end)


def span(start: int, end: int) -> Activity:
    return device(SAMPLE_RANGE, start, end, "gpu_user_annotation")


def test_device_work_belongs_to_the_sample_span_it_ran_in() -> None:
    activities = [
        host(SAMPLE_RANGE, 20, 60, "user_annotation"),
        host("aten::mm", 25, 50),
        host(SAMPLE_RANGE, 500, 540, "user_annotation"),
        device("reduce_kernel", 100, 130),  # the flush, before the first span
        span(140, 352),
        device("memset", 140, 142, "gpu_memset"),  # cuBLAS: a memset and two kernels
        device("gemm", 142, 342),
        device("splitk_reduce", 342, 352),
        device("spin_kernel", 400, 420),  # the hold before the next sample
        device("reduce_kernel", 420, 450),  # its flush
        span(600, 650),
        device("triton_kernel", 600, 650),  # no host op: inside its span all the same
        device("other_stream", 640, 700),  # ends past the span: not the sample's
    ]
    records = cupti.sample_records(activities)
    assert [r.activities for r in records] == [3, 1]
    assert [r.seconds for r in records] == pytest.approx([212e-9, 50e-9])


def test_records_stand_for_the_samples_only_one_to_one_and_never_empty() -> None:
    found = [SampleRecord(1e-3, 1), SampleRecord(2e-3, 2)]
    assert cupti.kernel_seconds(found, 2) == [1e-3, 2e-3]
    with pytest.raises(ValueError, match="2 sample spans on the GPU for 3 samples"):
        cupti.kernel_seconds(found, 3)
    with pytest.raises(ValueError, match="no device work recorded in 1 of 2"):
        cupti.kernel_seconds([SampleRecord(0.0, 0), SampleRecord(1e-3, 1)], 2)


class FakeRecords:
    """Ranges as the timer opens them; each holds one kernel `kernel_s` long, started
    `launch_s` after the range (what events time besides the kernel)."""

    def __init__(self, clock: Clock, kernel_s: float, fail: str | None = None) -> None:
        self.clock, self.kernel_s, self.fail = clock, kernel_s, fail
        self.ranges: list[float] = []
        self.entered = self.exited = 0
        self.overhead_s = 0.01

    def __enter__(self) -> FakeRecords:
        if self.fail == "start":
            raise RuntimeError("another profiler is running")
        self.entered += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.exited += 1

    def sample(self):
        import contextlib

        self.ranges.append(self.clock.now)
        return contextlib.nullcontext()

    def activities(self) -> list[Activity]:
        out = []
        for at in self.ranges:
            ns, kernel_ns = int(at * 1e9), int(self.kernel_s * 1e9)
            out.append(span(ns, ns + kernel_ns))
            if self.fail != "empty":
                out.append(device("k", ns, ns + kernel_ns))
        return out


def measure(records: FakeRecords, clock: Clock, dev: FakeDevice, slept: list[float]):
    kernel = _kernel(clock, 1.5e-3)  # events read 1.5 ms; the records 1 ms
    timer = cupti.CuptiTimer(dev, sleep=slept.append, records=lambda: records)
    return timer.measure(kernel, ISOLATED)


def test_the_samples_kept_are_the_kernel_durations_of_the_timed_calls() -> None:
    clock, slept = Clock(), []
    dev = FakeDevice(clock)
    records = FakeRecords(clock, kernel_s=1e-3)
    measured = measure(records, clock, dev, slept)
    assert measured.timer == "cupti" and measured.duty == "isolated"
    assert measured.samples_s == pytest.approx([1e-3] * 5)
    assert [b["median_s"] for b in measured.blocks] == pytest.approx([1e-3] * 5)
    assert measured.extra["event_median_s"] == pytest.approx(1.5e-3)
    assert measured.extra["kernels_per_sample"] == 1
    assert records.entered == records.exited == 1
    assert dev.flushes == len(slept) == 5  # an idle gap and a flush before every sample
    assert measured.settle is None


@pytest.mark.parametrize("fail, why", [("start", "did not start"), ("empty", "no device work")])
def test_without_usable_records_the_events_samples_stand_and_say_why(fail, why) -> None:
    clock = Clock()
    measured = measure(FakeRecords(clock, 1e-3, fail), clock, FakeDevice(clock), [])
    assert measured.timer == "event"  # the cell's later rounds are timed as these were
    assert measured.samples_s == pytest.approx([1.5e-3] * 5)
    assert why in measured.extra["kernel_records_failed"]


def test_the_cupti_timer_refuses_sustained_samples() -> None:
    with pytest.raises(ValidationError, match="kind cupti times isolated samples only"):
        TimerSpec(kind="cupti")
    clock = Clock()
    timer = cupti.CuptiTimer(FakeDevice(clock), records=lambda: FakeRecords(clock, 1e-3))
    with pytest.raises(ValueError, match="isolated samples only"):
        timer.measure(_kernel(clock, 1e-3), TimerSpec())


def test_auto_takes_cupti_for_isolated_samples_where_the_profiler_records_cuda(
    monkeypatch,
) -> None:
    monkeypatch.setattr(cupti, "available", lambda: True)
    monkeypatch.setattr(cuda, "choose_auto", lambda kernel: "by length")
    kernel = Kernel(run=lambda: None)
    chosen = choose_timer(kernel, ISOLATED, "cuda")
    assert isinstance(chosen, cupti.CuptiTimer)
    assert choose_timer(kernel, TimerSpec(), "cuda") == "by length"  # sustained
    staged = Kernel(run=lambda: None, stage_times=lambda: {})
    assert choose_timer(staged, ISOLATED, "cuda") == "by length"
    assert isinstance(choose_timer(kernel, ISOLATED, "cuda", chosen="cupti"), cupti.CuptiTimer)
    monkeypatch.setattr(cupti, "available", lambda: False)
    assert choose_timer(kernel, ISOLATED, "cuda") == "by length"


def test_torch_profiler_records_the_sample_ranges() -> None:
    torch = pytest.importorskip("torch")
    with cupti.KernelRecords() as records:
        for _ in range(3):
            with records.sample():
                torch.ones(8).sum()
    activities = records.activities()
    ranges = [a for a in activities if a.name == SAMPLE_RANGE and not a.on_device]
    assert len(ranges) == 3 and all(a.end_ns > a.start_ns for a in ranges)
    inside = [a for a in activities if a.name == "aten::sum"]
    assert len(inside) >= 3 and records.overhead_s > 0
    found = cupti.sample_records(activities)
    if not cupti.available():  # a CPU build: nothing ran on a device, no span recorded
        with pytest.raises(ValueError, match="0 sample spans on the GPU for 3 samples"):
            cupti.kernel_seconds(found, 3)


def test_records_without_an_activity_type_tell_work_from_annotations() -> None:
    # torch 2.11's records have no activity_type (the H200 machine's torch): there a
    # range's span on the GPU must not count as the call's work.
    class Old:
        def __init__(self, annotation: bool) -> None:
            self.annotation = annotation

        def is_user_annotation(self) -> bool:
            return self.annotation

    class New(Old):
        def activity_type(self) -> str:
            return "gpu_memset"

    assert cupti.activity_kind(Old(True), on_device=True) == "gpu_user_annotation"
    assert cupti.activity_kind(Old(False), on_device=True) == "kernel"
    assert cupti.activity_kind(Old(True), on_device=False) == "user_annotation"
    assert cupti.activity_kind(New(False), on_device=True) == "gpu_memset"
