"""The CUDA timers' and kernels' pure logic, on the CPU with fake devices: no GPU, no torch."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from kernbench.kernels import gemm_triton
from kernbench.kernels.base import Kernel
from kernbench.spec import TimerSpec
from kernbench.timing import cuda, nvml
from kernbench.timing.nvml import Reading

MIB = 1 << 20


def test_flush_buffer_is_twice_the_l2_rounded_to_a_mib() -> None:
    assert cuda.flush_bytes(60 * MIB) == 120 * MIB
    assert cuda.flush_bytes(50_000_000) == 96 * MIB  # 100 MB rounded up to whole MiB
    assert cuda.flush_bytes(1 * MIB) == 8 * MIB  # never under the floor


def test_graph_launches_fill_the_target_within_the_replay_cap() -> None:
    assert cuda.graph_launches(2e-6) == 500  # 1 ms of 2 us launches
    assert cuda.graph_launches(2e-6, flush_s=30e-6) == 500  # 500 x 32 us = 16 ms < 20 ms
    assert cuda.graph_launches(1e-6, flush_s=30e-6) == 645  # capped: 20 ms / 31 us
    assert cuda.graph_launches(0.5e-6) == cuda.MAX_GRAPH_LAUNCHES
    assert cuda.graph_launches(5e-3) == 1
    assert cuda.graph_launches(0.0) == cuda.MAX_GRAPH_LAUNCHES


def test_per_launch_subtracts_the_flush_graph() -> None:
    # 100 launches of 2 us each behind 100 flushes of 30 us.
    assert cuda.per_launch(100 * 32e-6, 100 * 30e-6, 100) == pytest.approx(2e-6)
    assert cuda.per_launch(1e-3, 0.0, 500) == pytest.approx(2e-6)


def test_batch_size() -> None:
    spec = TimerSpec(budget_s=1.0, min_samples=10, max_samples=100)
    assert cuda.batch_size(0, 0.0, None, spec) == 1
    assert cuda.batch_size(1, 0.01, 0.01, spec) == cuda.MAX_BATCH  # plenty of budget
    assert cuda.batch_size(5, 0.99, 0.1, spec) == 5  # budget nearly gone, min not reached
    assert cuda.batch_size(20, 0.5, 0.125, spec) == 4
    assert cuda.batch_size(99, 0.1, 0.001, spec) == 1  # max_samples caps
    assert cuda.batch_size(20, 2.0, 0.05, spec) == 1


def _enqueue_from(values: list[float]):
    values = list(values)

    def enqueue(n: int):
        taken = [values.pop(0) for _ in range(n)]
        return lambda: cuda.Batch(taken)

    return enqueue


class FakeWall:
    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_sample_converges_on_steady_values() -> None:
    spec = TimerSpec(min_samples=10, rel_ci=0.01)
    sampled = cuda.sample(spec, _enqueue_from([1e-3] * 1000), wall=FakeWall(1e-4))
    assert sampled.stop_reason == "converged"
    assert len(sampled.samples_s) >= 10
    assert sampled.sm_clock_mhz == [] and sampled.throttled == []


def test_sample_stops_on_budget_then_max_samples() -> None:
    noisy = [1e-3 * (1 + (i * 0.618034) % 1) for i in range(10_000)]
    spec = TimerSpec(min_samples=5, rel_ci=1e-6, budget_s=0.5, max_samples=10_000)
    sampled = cuda.sample(spec, _enqueue_from(noisy), wall=FakeWall(0.05))
    assert sampled.stop_reason == "budget"
    spec = TimerSpec(min_samples=5, rel_ci=1e-6, budget_s=1e9, max_samples=40)
    sampled = cuda.sample(spec, _enqueue_from(noisy), wall=FakeWall(1e-6))
    assert sampled.stop_reason == "max_samples"
    assert len(sampled.samples_s) == 40


def test_sample_marks_each_batch_with_its_clock_reading() -> None:
    readings = iter([Reading(1980.0, 0x1), Reading(1500.0, 0x4)] + [Reading(1980.0, 0)] * 100)
    spec = TimerSpec(min_samples=3, rel_ci=0.01)
    sampled = cuda.sample(spec, _enqueue_from([1e-3] * 100), lambda: next(readings))
    n = len(sampled.samples_s)
    assert len(sampled.sm_clock_mhz) == len(sampled.throttled) == n
    # First batch is one sample at idle reasons (not throttling); the second hit a power cap.
    assert sampled.throttled[0] is False
    assert sampled.throttled[1] is True
    assert sampled.sm_clock_mhz[1] == 1500.0


def test_throttle_classification() -> None:
    assert not nvml.is_throttled(0x1 | 0x2 | 0x10)  # idle, app clocks, sync boost
    for name in ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown"):
        assert nvml.is_throttled(nvml.REASON_BITS[name])
    assert nvml.reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]


def test_clock_reader_without_nvml_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    reader = nvml.ClockReader()
    assert not reader.available
    assert reader.read() is None
    assert nvml.device_name() is None


# -- timers with a fake device -------------------------------------------------------------


@dataclass
class Clock:
    now: float = 0.0


class FakeEvent:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.t = float("nan")

    def record(self) -> None:
        self.t = self.clock.now

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.t - self.t) * 1e3


class FakeGraph:
    def __init__(self, body) -> None:
        self.body = body

    def replay(self) -> None:
        self.body()


@dataclass
class FakeDevice:
    clock: Clock
    flush_s: float = 30e-6
    l2_bytes: int = 60 * MIB
    flushes: int = 0
    captured: list = field(default_factory=list)

    def prepare(self) -> dict:
        return {"persisting_l2_reset": "ok"}

    def events(self, n: int) -> list:
        return [(FakeEvent(self.clock), FakeEvent(self.clock)) for _ in range(n)]

    def flush(self) -> None:
        self.flushes += 1
        self.clock.now += self.flush_s

    def synchronize(self) -> None:
        pass

    def capture(self, body) -> FakeGraph:
        self.captured.append(body)
        return FakeGraph(body)

    def read_clock(self) -> Reading:
        return Reading(1980.0, 0)


def _kernel(clock: Clock, seconds: float, **kwargs) -> Kernel:
    def run() -> None:
        clock.now += seconds

    return Kernel(run=run, **kwargs)


def test_event_timer_times_the_call_not_the_flush() -> None:
    clock = Clock()
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=10, l2="cold")
    measured = cuda.EventTimer(device).measure(_kernel(clock, 1e-3), spec)
    assert measured.timer == "event"
    assert measured.samples_s == pytest.approx([1e-3] * len(measured.samples_s))
    assert device.flushes == len(measured.samples_s)
    assert measured.sm_clock_mhz[0] == 1980.0 and measured.throttled[0] is False
    assert measured.extra["persisting_l2_reset"] == "ok"
    assert measured.extra["flush_bytes"] == 120 * MIB


def test_event_timer_warm_l2_does_not_flush() -> None:
    clock = Clock()
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="warm")
    cuda.EventTimer(device).measure(_kernel(clock, 1e-3), spec)
    assert device.flushes == 0


def test_event_timer_records_stages_per_sample() -> None:
    clock = Clock()
    stages = {"h2d": 1e-3, "gemm": 2e-3, "d2h": 1e-3}
    kernel = _kernel(clock, 4e-3, stages=tuple(stages), stage_times=lambda: stages)
    spec = TimerSpec(warmup_s=0.0, min_samples=4)
    measured = cuda.EventTimer(FakeDevice(clock)).measure(kernel, spec)
    n = len(measured.samples_s)
    assert {name: len(v) for name, v in measured.stages_s.items()} == dict.fromkeys(stages, n)


def test_graph_timer_subtracts_the_flush_graph() -> None:
    clock = Clock()
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="cold")
    measured = cuda.GraphTimer(device).measure(_kernel(clock, 2e-6), spec)
    assert measured.timer == "graph"
    assert measured.samples_s == pytest.approx([2e-6] * len(measured.samples_s))
    launches = measured.extra["launches_per_graph"]
    assert launches == cuda.graph_launches(2e-6, 30e-6)
    assert len(device.captured) == 2  # (flush + run) x N, and flush x N


def test_graph_timer_falls_back_when_capture_fails() -> None:
    clock = Clock()

    class Uncapturable(FakeDevice):
        def capture(self, body):
            raise RuntimeError("operation not permitted when stream is capturing")

    device = Uncapturable(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="warm")
    timer = cuda.GraphTimer(device, fallback=cuda.EventTimer(device))
    measured = timer.measure(_kernel(clock, 1e-5), spec)
    assert measured.timer == "event"
    assert "capturing" in measured.extra["graph_capture_failed"]


def test_choose_timer_honours_an_explicit_kind() -> None:
    kernel = Kernel(run=lambda: None)
    assert cuda.choose_timer(kernel, TimerSpec(kind="event")).name == "event"
    assert cuda.choose_timer(kernel, TimerSpec(kind="graph")).name == "graph"
    assert cuda.choose_timer(kernel, TimerSpec(kind="cpu")).name == "cpu"


# -- triton pins -----------------------------------------------------------------------------


@dataclass(eq=False)  # hashed by identity, as the autotuner's timings dict needs
class FakeConfig:
    kwargs: dict
    num_warps: int
    num_stages: int


def _fake_configs() -> list[FakeConfig]:
    out = []
    for values in gemm_triton.config_space():
        meta = {k: values[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
        out.append(FakeConfig(meta, values["num_warps"], values["num_stages"]))
    return out


def test_prune_to_pin_leaves_exactly_the_pinned_config() -> None:
    configs = _fake_configs()
    pin = gemm_triton.config_space()[3]
    assert gemm_triton.prune_to(configs, None) == configs
    pruned = gemm_triton.prune_to(configs, pin)
    assert len(pruned) == 1 and gemm_triton.config_dict(pruned[0]) == pin
    with pytest.raises(ValueError, match="not among"):
        gemm_triton.prune_to(configs, {**pin, "num_stages": 99})


def test_config_space_is_json_ready_and_normalized() -> None:
    space = gemm_triton.config_space()
    assert 8 <= len(space) <= 16
    assert all(tuple(c) == gemm_triton.CONFIG_KEYS for c in space)
    pin = gemm_triton.normalize_config({k: str(v) for k, v in space[0].items()})
    assert pin == space[0]
    with pytest.raises(ValueError, match="lacks num_stages"):
        gemm_triton.normalize_config({k: v for k, v in space[0].items() if k != "num_stages"})
    assert gemm_triton.tile_of(space[0]) == (space[0]["BLOCK_M"], space[0]["BLOCK_N"], 64)


def test_source_hash_is_stable_and_keys_on_the_kernel_text() -> None:
    first = gemm_triton.source_hash()
    assert first == gemm_triton.source_hash()
    assert len(first) == 16 and int(first, 16) >= 0
    source, _ = gemm_triton._jit_parts()
    assert source.startswith("def matmul_kernel(") and "tl.dot" in source


def test_candidates_from_autotuner_timings() -> None:
    a, b = _fake_configs()[:2]
    candidates = gemm_triton.candidates_from_timings({a: [0.5, 0.4, 0.6], b: float("inf")})
    assert candidates[0]["time_s"] == pytest.approx(5e-4)
    assert candidates[1]["time_s"] is None
    assert candidates[0]["config"] == gemm_triton.config_space()[0]


def test_gpu_modules_import_without_torch() -> None:
    code = (
        "import sys; "
        "import kernbench.timing.cuda, kernbench.timing.nvml, kernbench.kernels.gemm_cuda, "
        "kernbench.kernels.gemm_triton, kernbench.calibrate; "
        "loaded = {'torch', 'triton', 'pynvml'} & set(sys.modules); "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
