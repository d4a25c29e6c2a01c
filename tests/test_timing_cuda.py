"""The CUDA timers' and kernels' pure logic, on the CPU with fake devices: no GPU, no torch."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from script_modules import load_script

from kernbench.kernels import gemm_triton, gpu_hold
from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TIMERS, TimerSpec
from kernbench.timing import choose_timer, cuda, cuda_device, nvml, sampling, steady
from kernbench.timing.nvml import Reading

MIB = 1 << 20


def test_flush_buffer_is_twice_the_l2_rounded_to_a_mib() -> None:
    assert cuda_device.flush_bytes(60 * MIB) == 120 * MIB
    assert cuda_device.flush_bytes(50_000_000) == 96 * MIB  # 100 MB rounded up to whole MiB
    assert cuda_device.flush_bytes(1 * MIB) == 8 * MIB  # never under the floor


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
    assert sampling.batch_size(0, 0.0, None, spec) == 1
    assert sampling.batch_size(1, 0.01, 0.01, spec) == sampling.MAX_BATCH  # plenty of budget
    assert sampling.batch_size(5, 0.99, 0.1, spec) == 5  # budget nearly gone, min not reached
    assert sampling.batch_size(20, 0.5, 0.125, spec) == 4
    assert sampling.batch_size(99, 0.1, 0.001, spec) == 1  # max_samples caps
    assert sampling.batch_size(20, 2.0, 0.05, spec) == 1


def _enqueue_from(values: list[float]):
    values = list(values)

    def enqueue(n: int, behind: bool = False):
        taken = [values.pop(0) for _ in range(n)]
        return lambda: sampling.Batch(taken)

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
    sampled = sampling.sample(spec, _enqueue_from([1e-3] * 1000), wall=FakeWall(1e-4))
    assert sampled.stop_reason == "converged"
    assert len(sampled.samples_s) >= 10
    assert sampled.sm_clock_mhz == [] and sampled.throttled == []


def test_sample_stops_on_budget_then_max_samples() -> None:
    noisy = [1e-3 * (1 + (i * 0.618034) % 1) for i in range(10_000)]
    spec = TimerSpec(min_samples=5, rel_ci=1e-6, budget_s=0.5, max_samples=10_000)
    sampled = sampling.sample(spec, _enqueue_from(noisy), wall=FakeWall(0.05))
    assert sampled.stop_reason == "budget"
    spec = TimerSpec(min_samples=5, rel_ci=1e-6, budget_s=1e9, max_samples=40)
    sampled = sampling.sample(spec, _enqueue_from(noisy), wall=FakeWall(1e-6))
    assert sampled.stop_reason == "max_samples"
    assert len(sampled.samples_s) == 40


def test_sample_marks_each_batch_with_its_clock_reading() -> None:
    readings = iter([Reading(1980.0, 0x1), Reading(1500.0, 0x4)] + [Reading(1980.0, 0)] * 100)
    spec = TimerSpec(min_samples=3, rel_ci=0.01)
    sampled = sampling.sample(spec, _enqueue_from([1e-3] * 100), lambda: next(readings))
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
    """The fake GPU's time and its one stream: records are numbered in stream order, and a
    wait completes everything up to what it waits for."""

    now: float = 0.0
    event_waits: int = 0
    ahead_done: bool = False  # whether a batch queued ahead has finished when the next comes
    recorded: int = 0
    completed: int = 0


class FakeEvent:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.t = float("nan")
        self.seq = 0

    def record(self) -> None:
        self.t = self.clock.now
        self.clock.recorded += 1
        self.seq = self.clock.recorded

    def elapsed_time(self, end: FakeEvent) -> float:
        assert max(self.seq, end.seq) <= self.clock.completed, "read before its record ran"
        return (end.t - self.t) * 1e3

    def synchronize(self) -> None:
        self.clock.event_waits += 1
        self.clock.completed = max(self.clock.completed, self.seq)

    def query(self) -> bool:
        return self.clock.ahead_done


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
    flush_mode: str = "read"
    holds: list = field(default_factory=list)
    syncs: int = 0

    @property
    def flush_size(self) -> int:
        return cuda_device.flush_bytes(self.l2_bytes)

    def prepare(self, cold: bool = False) -> dict:
        return {"persisting_l2_reset": "ok"}

    def events(self, n: int, slot: int = 0) -> list:
        return [(FakeEvent(self.clock), FakeEvent(self.clock)) for _ in range(n)]

    def flush(self) -> None:
        self.flushes += 1
        self.clock.now += self.flush_s

    def synchronize(self) -> None:
        self.syncs += 1
        self.clock.completed = self.clock.recorded

    def hold(self, seconds: float) -> None:
        self.holds.append(seconds)
        self.clock.now += seconds

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
    spec = TimerSpec(warmup_s=0.0, min_samples=10, l2="cold", duty="isolated")
    measured = cuda.EventTimer(device, sleep=lambda s: None).measure(_kernel(clock, 1e-3), spec)
    assert measured.timer == "event"
    assert measured.samples_s == pytest.approx([1e-3] * len(measured.samples_s))
    assert device.flushes == len(measured.samples_s)  # isolated: nothing queued ahead
    assert measured.sm_clock_mhz[0] == 1980.0 and measured.throttled[0] is False
    assert measured.extra["persisting_l2_reset"] == "ok"
    assert measured.extra["flush_bytes"] == 120 * MIB
    assert measured.extra["flush"] == "read"


@pytest.mark.parametrize("timer", [cuda.EventTimer, cuda.GraphTimer])
def test_a_sustained_batch_is_read_without_draining_the_one_queued_behind_it(timer) -> None:
    # A device-wide sync would wait for the batch queued ahead too, and the GPU would idle
    # while the host reads and enqueues: each batch waits on its own last event instead.
    syncs, batches = [], []
    for samples in (40, 200):
        clock = Clock()
        device = FakeDevice(clock)
        spec = TimerSpec(warmup_s=0.0, min_samples=samples, l2="cold", settle_s=0.0)
        measured = timer(device).measure(_kernel(clock, 1e-3), spec)
        assert clock.event_waits == len(measured.blocks) + 1  # + the one drained at the stop
        syncs.append(device.syncs)
        batches.append(len(measured.blocks))
    assert batches[1] > batches[0] and syncs[1] == syncs[0]  # set-up's syncs only


def test_the_estimates_time_their_call_after_an_untimed_one() -> None:
    # The kernel's calls are queued behind a hold (a kernel shorter than its launch would
    # read the launch rate); the flush, longer than its launch, is not.
    clock = Clock()
    device = FakeDevice(clock, flush_s=40e-6)
    assert cuda.eager_estimate(_kernel(clock, 2e-6), device) == pytest.approx(2e-6)
    assert device.holds == [gpu_hold.FIRST_HOLD_S] and device.flushes == 0
    assert cuda.flush_estimate(device) == pytest.approx(40e-6)
    assert device.holds == [gpu_hold.FIRST_HOLD_S]
    assert device.flushes == 1 + cuda.FLUSH_ESTIMATE_CALLS


@pytest.mark.parametrize("timer", [cuda.EventTimer, cuda.GraphTimer])
def test_a_batch_behind_one_that_already_finished_gets_a_full_hold(timer) -> None:
    # A short batch can finish while the host reads the one before it: the GPU is then
    # idle, and the next batch needs the full hold, not just the host's catch-up.
    holds = {}
    for ahead_done in (False, True):
        clock = Clock(ahead_done=ahead_done)
        device = FakeDevice(clock)
        spec = TimerSpec(warmup_s=0.0, min_samples=100, l2="cold", settle_s=0.0)
        timer(device).measure(_kernel(clock, 1e-3), spec)
        holds[ahead_done] = device.holds
    # A GPU-bound kernel queued behind a running batch: held before the first two
    # batches only (the second before the GPU's pace is known); behind finished ones, all.
    sampling_holds = len(holds[True]) - len(holds[False]) + 2
    assert sampling_holds > 2 and all(h > 0 for h in holds[True])
    if timer is cuda.EventTimer:
        assert len(holds[False]) == 2


def test_event_timer_reports_the_device_flush_and_rejects_unknown_ones() -> None:
    clock = Clock()
    device = FakeDevice(clock, flush_mode="write")
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="cold")
    measured = cuda.EventTimer(device).measure(_kernel(clock, 1e-3), spec)
    assert measured.extra["flush"] == "write"
    warm = cuda.EventTimer(device).measure(
        _kernel(clock, 1e-3), spec.model_copy(update={"l2": "warm"})
    )
    assert "flush" not in warm.extra and warm.extra["flush_bytes"] == 0
    with pytest.raises(ValueError, match="unknown flush"):
        cuda.EventTimer(flush="memset")


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


def test_graph_timer_captures_a_kernel_once_for_all_its_measurements() -> None:
    # An interleaved A/B measures a held cell every few milliseconds, one turn at a time.
    clock = Clock()
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="cold")
    timer = cuda.GraphTimer(device)
    kernel = _kernel(clock, 2e-6)
    first = timer.measure(kernel, spec)
    again = timer.measure(kernel, spec)
    assert len(device.captured) == 2
    assert again.samples_s == pytest.approx([2e-6] * len(again.samples_s))
    assert again.extra["launches_per_graph"] == first.extra["launches_per_graph"]
    timer.measure(_kernel(clock, 2e-6), spec)  # another kernel: its own graphs
    assert len(device.captured) == 4
    timer.measure(_kernel(clock, 2e-6), spec.model_copy(update={"l2": "warm"}))
    assert len(device.captured) == 5


def test_graph_timer_falls_back_when_capture_fails() -> None:
    clock = Clock()

    class Uncapturable(FakeDevice):
        tries = 0

        def capture(self, body):
            self.tries += 1
            raise RuntimeError("operation not permitted when stream is capturing")

    device = Uncapturable(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="warm")
    timer = cuda.GraphTimer(device, fallback=cuda.EventTimer(device))
    kernel = _kernel(clock, 1e-5)
    measured = timer.measure(kernel, spec)
    assert measured.timer == "event"
    assert "capturing" in measured.extra["graph_capture_failed"]
    again = timer.measure(kernel, spec)  # an A/B's next turn: no second try
    assert device.tries == 1
    assert again.extra["graph_capture_failed"] == measured.extra["graph_capture_failed"]


class JitteryFlushes(FakeDevice):
    """Flushes of 2.5 ms (FlagGems' sum once was one) that vary by +-1%: a graph of 7
    launches of 2 us cannot see them past the flush graph's jitter."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock, flush_s=2.5e-3)
        self.jitter = itertools.cycle([1.01, 0.99, 1.0, 0.995, 1.005])

    def flush(self) -> None:
        self.flushes += 1
        self.clock.now += self.flush_s * next(self.jitter)


def test_graph_samples_at_or_below_zero_send_the_kernel_to_the_fallback() -> None:
    clock = Clock()
    device = JitteryFlushes(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="cold")
    timer = cuda.GraphTimer(device, fallback=cuda.EventTimer(device))
    kernel = _kernel(clock, 2e-6)
    measured = timer.measure(kernel, spec)
    assert measured.timer == "event"
    assert measured.samples_s == pytest.approx([2e-6] * len(measured.samples_s))
    assert "at or below zero" in measured.extra["graph_unresolved"]
    captured = len(device.captured)
    again = timer.measure(kernel, spec)  # an A/B's next turn: straight to the fallback
    assert again.timer == "event" and len(device.captured) == captured
    assert again.extra["graph_unresolved"] == measured.extra["graph_unresolved"]
    clock = Clock()
    with pytest.raises(RuntimeError, match="8 launches behind flushes of 2[.][0-9]+e\\+03 us"):
        cuda.GraphTimer(JitteryFlushes(clock)).measure(_kernel(clock, 2e-6), spec)


def test_unresolved_names_only_samples_that_are_not_a_time() -> None:
    assert cuda.unresolved([1e-6, 2e-6], 500, 30e-6) is None
    assert cuda.unresolved([1e-6, 0.0, -1e-7], 7, 0.0) == "2 of 3 graph samples at or below zero"


def test_choose_timer_honours_an_explicit_kind_through_the_registry() -> None:
    kernel = Kernel(run=lambda: None)
    for kind in TIMERS:
        spec = TimerSpec(kind=kind, duty="isolated" if kind == "cupti" else "sustained")
        assert choose_timer(kernel, spec, "cuda").name == kind
    assert choose_timer(kernel, TimerSpec(kind="event"), "cpu").name == "cpu"


def test_choose_timer_takes_a_cells_earlier_choice_over_the_spec() -> None:
    kernel = Kernel(run=lambda: None)
    assert choose_timer(kernel, TimerSpec(kind="auto"), "cuda", "event").name == "event"
    assert choose_timer(kernel, TimerSpec(kind="event"), "cuda", "graph").name == "graph"
    # not a registry timer (the ranks timer's name): the spec's kind
    assert choose_timer(kernel, TimerSpec(kind="event"), "cuda", "collective").name == "event"
    assert choose_timer(kernel, TimerSpec(kind="event"), "cpu", "graph").name == "cpu"


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
        "kernbench.kernels.gemm_triton, kernbench.execute.calibrate; "
        "loaded = {'torch', 'triton', 'pynvml'} & set(sys.modules); "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- scripts/fidelity.py: cases, ncu parsing, ratios, the table --------------------------------


# Loading fidelity.py puts scripts/ on the path and imports the modules it is split into.
load_script("fidelity")
fidelity_cases = sys.modules["fidelity_cases"]
fidelity_tools = sys.modules["fidelity_tools"]
fidelity_ncu = sys.modules["fidelity_ncu"]
fidelity_summary = sys.modules["fidelity_summary"]
page = sys.modules["fidelity_page"]


def test_fidelity_cases_and_alternating_order() -> None:
    assert fidelity_cases.parse_case("gemm-bf16-4096x4096x1024") == {
        "kind": "gemm", "dtype": "bf16", "M": 4096, "N": 4096, "K": 1024
    }  # fmt: skip
    assert fidelity_cases.parse_case("gemm-fp16-2048")["K"] == 2048
    assert fidelity_cases.parse_case("add-65536") == {"kind": "add", "elements": 65536}
    with pytest.raises(ValueError):
        fidelity_cases.parse_case("conv-3")
    assert fidelity_cases.parse_case("empty-0") == {"kind": "empty"}
    names = fidelity_cases.cases([1024])
    assert names[0] == "gemm-bf16-1024" and names[-2:] == ["add-65536", "empty-0"]
    assert "do_bench_cudagraph" in fidelity_cases.tools_for("add-65536")
    assert fidelity_cases.order(0, "abc") == ["a", "b", "c"]
    assert fidelity_cases.order(1, "abc") == ["c", "b", "a"]


def test_fidelity_ratios_and_spreads() -> None:
    stats = fidelity_summary.rep_stats([1.0, 1.02, 0.99])
    assert stats == pytest.approx({"median": 1.0, "spread": 0.03})
    paired = fidelity_summary.paired_ratio([2.0, 2.2, 2.0], [2.0, 2.0, 2.0])
    assert paired["ratio"] == pytest.approx(1.0)
    assert paired["spread"] == pytest.approx(0.1)
    assert not fidelity_summary.within(paired)  # the ratio is 1, but the spread does not back it
    assert fidelity_summary.within({"ratio": 1.009, "spread": 0.005})
    assert not fidelity_summary.within({"ratio": 0.985, "spread": 0.001})
    # 10 us at 1500 MHz and 8 us at 1875 MHz are the same 15000 cycles.
    assert fidelity_summary.cycles_ratio(10e-6, 1500.0, 8e-6, 1875.0) == pytest.approx(1.0)
    assert fidelity_summary.cycles_ratio(1.0, None, 1.0, 1980.0) is None
    runs = [{"by_clock": {"1980": [1.0, 10], "1755": [1.2, 5]}}, {"by_clock": {"1970": [1.1, 3]}}]
    assert fidelity_summary.at_clock(runs, 1975.0) == pytest.approx(1.05)
    assert fidelity_summary.at_clock(runs, 1400.0) is None
    assert fidelity_tools.by_clock([1.0, 3.0, 2.0], [1980.0, 1980.0, 1755.0]) == {
        "1755": [2.0, 1], "1980": [2.0, 2]
    }  # fmt: skip


NCU_CSV = """==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","1.50"
"0","1","python3","h","void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__cycles_elapsed.avg.per_second","cycle/nsecond","1.98"
"""  # noqa: E501


def _ncu_rows(kernel: str, us: float, ghz: float, first_id: int) -> str:
    head = f'"{first_id}","1","python3","h","{kernel}","1","7","(1,1,1)","(1,1,1)","0","9.0","m",'
    return (
        f'{head}"gpu__time_duration.sum","usecond","{us:,.2f}"\n'
        f'{head}"sm__cycles_elapsed.avg.per_second","cycle/nsecond","{ghz}"\n'
    )


def test_fidelity_reads_ncu_launches_per_case_and_call() -> None:
    text = NCU_CSV
    launch = 1
    for _ in range(fidelity_ncu.NCU_CALLS):  # case one: two kernels per call
        text += _ncu_rows("nvjet_gemm", 100.0, 1.98, launch) + _ncu_rows(
            "splitk", 10.0, 1.98, launch + 1
        )
        launch += 2
    text += _ncu_rows("FillFunctor", 1.0, 1.98, launch)
    for i in range(fidelity_ncu.NCU_CALLS):  # case two: one kernel per call, 1 ms
        text += _ncu_rows("nvjet_gemm", 1000.0 + i, 1.755, launch + 1 + i)
    launches = fidelity_ncu.parse_ncu_csv(text)
    assert len(launches) == 1 + 2 * fidelity_ncu.NCU_CALLS + 1 + fidelity_ncu.NCU_CALLS
    assert launches[1]["gpu__time_duration.sum"] == ["100.00", "usecond"]
    found = fidelity_ncu.split_cases(launches, ["one", "two"])
    assert found["one"]["kernels_per_call"] == 2
    assert found["one"]["median_s"] == pytest.approx(110e-6)
    assert found["one"]["clock_mhz"] == pytest.approx(1980.0)
    assert found["two"]["median_s"] == pytest.approx(1002e-6)  # "1,002.00" read as 1002
    assert found["two"]["clock_mhz"] == pytest.approx(1755.0)
    assert "error" in fidelity_ncu.split_cases(launches, ["one"])
    assert fidelity_ncu.ncu_value(["3", "furlong"], fidelity_ncu.UNIT_SECONDS) is None
    seconds = fidelity_ncu.ncu_value(["1.5", "msecond"], fidelity_ncu.UNIT_SECONDS)
    assert seconds == pytest.approx(1.5e-3)


def _fake_run(name: str, kernel_s: float, reps: int = 4) -> dict:
    """Each tool at a fixed fraction of `kernel_s`, with a +-0.15% drift over repetitions."""
    scale = {"event_read": 0.98, "graph_read": 0.97, "graph_warm": 0.5, "do_bench_cudagraph": 0.5,
             "do_bench_settled": 0.995, "do_bench_long": 1.03, "event_write_deep": 0.99}

    def run(seconds: float, rep: int) -> dict:
        drift = 1 + 0.001 * (rep - 1.5)
        by_clock = {"1980": [seconds, 20]}
        return {"median_s": seconds * drift, "clock_mhz": 1980.0, "by_clock": by_clock}

    # Pages from before the precondition ran the bisecting tools too: still rendered.
    tools = (*fidelity_cases.tools_for(name), "do_bench_settled", "do_bench_long",
             "event_write_deep", "do_bench_again")
    runs = {t: [run(kernel_s * scale.get(t, 1.0), r) for r in range(reps)] for t in tools}
    return {"auto_timer": "event", "runs": runs, "orders": []}


def test_fidelity_markdown_from_json_alone() -> None:
    names = ["gemm-bf16-4096", "gemm-bf16-1024", "add-65536"]
    launches = []
    for seconds in (175e-6, 8e-6, 2.4e-6, 1.4e-3):
        launches.append({"kernel": "FillFunctor", "gpu__time_duration.sum": ["1", "usecond"]})
        for _ in range(fidelity_ncu.NCU_CALLS):
            launches.append({
                "kernel": "k",
                "gpu__time_duration.sum": [f"{seconds * 1e6:.3f}", "usecond"],
                "sm__cycles_elapsed.avg.per_second": ["1.98", "cycle/nsecond"],
            })  # fmt: skip
    data = {
        "provenance": {
            "gpu": "NVIDIA H200", "driver": "580", "torch": "2.11", "cuda": "12.9",
            "triton": "3.6", "date": "2026-11-20T00:00:00Z", "flush": {"do_bench": "zero_()"},
        },
        "settings": {"cases": names + ["gemm-bf16-8192"], "reps": 4},
        "cases": {
            "gemm-bf16-4096": _fake_run("gemm-bf16-4096", 175e-6),
            "gemm-bf16-1024": _fake_run("gemm-bf16-1024", 8e-6),
            "add-65536": _fake_run("add-65536", 5e-6),
            "gemm-bf16-8192": {"error": "RuntimeError: out of memory"},
        },
        "ncu": {"all": {"launches": launches}, "none": {"error": "ncu took over 120 s"}},
    }  # fmt: skip
    small = data["cases"]["gemm-bf16-1024"]
    del small["runs"]["graph_read"]
    small["tool_errors"] = {"graph_read": "RuntimeError: capture failed"}
    text = page.markdown(data)
    assert "gemm-bf16-1024, graph_read: RuntimeError: capture failed" in text
    assert "| gemm-bf16-4096 | 175.00 | event |" in text
    assert "1.000 (1.000-1.000)" in text  # event write / do_bench
    assert "0.980" in text  # event read / do_bench
    assert "within 1% with a spread under 1%: gemm-bf16-4096." in text
    assert "(n = 1)" in text  # only the 4096 GEMM is 20 us or more
    assert "### add-65536" in text and "ncu took over 120 s" in text
    assert "each tool in the state the tool before it left" in text  # no precondition_s
    bisect = next(line for line in text.splitlines() if line.startswith("| gemm-bf16-4096 | 1.0"))
    assert bisect.startswith("| gemm-bf16-4096 | 1.000 (1.000-1.000) | 0.990 (0.990-0.990) |")
    assert "gemm-bf16-8192: RuntimeError: out of memory" in text
    row = next(line for line in text.splitlines() if line.startswith("| gemm-bf16-4096 | 175.00 |"))
    assert row.count("|") == 13
    ncu = "| gemm-bf16-4096 | 175.00 | - | 1980 | 171.50 @ 1980 | 0.980 | 0.970 | 1.000 | 1.000 |"
    assert ncu in text
    assert "| ncu | 2.40 | cold (--cache-control all) |" in text
    assert "event/ncu 0.980-0.980" in text
    # do_bench in kernbench's power state: behind its settle phase, and over its window.
    assert ("behind the same settle phase 1.005-1.005, sampling over kernbench's whole "
            "window 0.971-0.971; within 1% with a spread under 1% on either: "
            "gemm-bf16-4096.") in text


def test_event_timer_holds_the_gpu_while_the_host_enqueues_each_batch() -> None:
    clock = Clock()
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=40, l2="cold")
    measured = cuda.EventTimer(device).measure(_kernel(clock, 1e-3), spec)
    # One hold per batch, outside every sample: the samples are the kernel alone.
    assert len(device.holds) >= 2
    assert device.holds[0] == gpu_hold.FIRST_HOLD_S
    assert measured.samples_s == pytest.approx([1e-3] * len(measured.samples_s))


@pytest.mark.parametrize("timer", [cuda.EventTimer, cuda.GraphTimer])
def test_a_kernels_later_measurements_keep_its_pace_and_skip_the_first_hold(timer) -> None:
    # An interleaved A/B times a cell in turns of ~5 ms: a first hold of 1 ms each was a
    # fifth of the turn. Another kernel starts from an unknown pace again.
    clock = Clock()
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=20, max_samples=20, l2="cold", settle_s=0.0)
    kernel, other = _kernel(clock, 50e-6), _kernel(clock, 50e-6)
    measure = timer(device).measure
    first_holds = []
    for k in (kernel, kernel, kernel, other):
        device.holds.clear()
        measure(k, spec)
        first_holds.append(device.holds[0])
    assert first_holds[0] == first_holds[3] == gpu_hold.FIRST_HOLD_S
    assert 0 < max(first_holds[1:3]) < gpu_hold.FIRST_HOLD_S / 10


def test_host_pace_holds_only_as_long_as_the_host_needs() -> None:
    pace = gpu_hold.HostPace()
    assert pace.hold_for(8) == gpu_hold.FIRST_HOLD_S
    pace.enqueued(4, 200e-6)  # 50 us of host time per sample
    lead = gpu_hold.HOLD_MARGIN * gpu_hold.HOLD_LEAD_SAMPLES * 50e-6
    pace.ran([200e-6] * 4)  # the GPU is slower: the host stays ahead after a short lead
    assert pace.hold_for(10) == pytest.approx(lead)
    pace.ran([10e-6] * 4)  # the host is slower: hold for what it loses over the batch
    assert pace.hold_for(10) == pytest.approx(lead + gpu_hold.HOLD_MARGIN * 10 * 40e-6)


def test_host_pace_says_how_many_samples_one_hold_covers() -> None:
    pace = gpu_hold.HostPace()
    assert pace.fitting(100) == 4  # unknown pace: a few first
    pace.enqueued(4, 200e-6)
    pace.ran([200e-6] * 4)  # the GPU is slower: any batch keeps the host ahead
    assert pace.fitting(100_000) == 100_000
    pace.ran([10e-6] * 4)  # the host loses 40 us a sample: the hold's cap limits the batch
    fits = pace.fitting(100_000)
    assert pace.hold_for(fits) <= gpu_hold.MAX_HOLD_S < pace.hold_for(fits + 1)
    assert pace.fitting(3) == 3


def test_staged_kernels_are_not_held() -> None:
    clock = Clock()
    device = FakeDevice(clock)
    kernel = _kernel(clock, 1e-3, stages=("h2d", "gemm", "d2h"),
                     stage_times=lambda: {"h2d": 1.0, "gemm": 2.0, "d2h": 3.0})
    cuda.EventTimer(device).measure(kernel, TimerSpec(warmup_s=0.0, min_samples=5))
    assert device.holds == []


# -- duty cycles ---------------------------------------------------------------------------


def test_sustained_sampling_keeps_a_batch_queued_ahead_and_drops_it_at_the_stop() -> None:
    queued: list[tuple[int, bool]] = []
    values = [1e-3] * 10_000

    def enqueue(n: int, behind: bool):
        queued.append((n, behind))
        taken = [values.pop() for _ in range(n)]
        return lambda: sampling.Batch(taken)

    spec = TimerSpec(min_samples=10, rel_ci=0.01)
    sampled = sampling.sample(spec, enqueue, wall=FakeWall(1e-4), ahead=True)
    assert queued[0] == (1, False)
    assert all(behind for _, behind in queued[1:])  # every later batch found one ahead
    assert sum(n for n, _ in queued) > len(sampled.samples_s)  # the last one was dropped
    assert [b.samples for b in sampled.blocks] == [n for n, _ in queued[:-1]]


def test_sustained_event_timer_settles_first_and_holds_only_its_first_block() -> None:
    clock = Clock()
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, min_samples=40, l2="cold", settle_s=0.5, settle_min_s=0.0)
    measured = cuda.EventTimer(device).measure(_kernel(clock, 1e-3), spec)
    assert measured.duty == "sustained"
    assert measured.settle is not None and measured.settle["settled"] is True
    # one sample, then blocks sized from the wall time a sample took: they agree at once
    assert measured.settle["settled"] and len(measured.settle["block_medians_s"]) == 3
    # Held a full hold before the first settle block only; every later block and batch was
    # queued behind one still running, or held for what the fast host loses: microseconds.
    assert device.holds[0] == gpu_hold.FIRST_HOLD_S and max(device.holds[1:]) < 1e-4
    # Queued behind another: the settle blocks after the first (3 read, 1 drained) and every
    # batch of samples but the first (one more drained at the stop).
    behind = int(measured.extra["batches_found_gpu_idle"].split(" of ")[1])
    assert behind == 3 + len(measured.blocks)
    assert sum(b["samples"] for b in measured.blocks) == len(measured.samples_s)


def test_isolated_event_timer_idles_before_every_sample_and_does_not_settle() -> None:
    clock = Clock()
    device = FakeDevice(clock)
    slept: list[float] = []
    spec = TimerSpec(warmup_s=0.0, min_samples=5, duty="isolated")
    measured = cuda.EventTimer(device, sleep=slept.append).measure(_kernel(clock, 1e-3), spec)
    assert measured.duty == "isolated" and measured.settle is None
    assert len(slept) == len(measured.samples_s)
    assert slept[0] == steady.ISOLATED_GAP_S  # nothing known yet
    assert slept[-1] == pytest.approx(steady.isolated_gap(1e-3))  # 10 x the kernel
    assert all(b["samples"] == 1 for b in measured.blocks)


def blocks_of(values) -> Callable:
    """A settle `start_block` whose blocks take the next value of `values` for each sample,
    in the order they are queued."""
    values = iter(values)

    def start_block(n: int, behind: bool) -> Callable[[], list[float]]:
        taken = [next(values)] * n
        return lambda: taken

    return start_block


def test_settle_stops_when_two_blocks_agree_or_at_its_cap() -> None:
    queued: list[tuple[int, bool]] = []
    medians = blocks_of([5e-3, 1.2e-3, 1.1e-3, 1.0e-3, 1.004e-3, 9.0e-4])

    def start_block(n: int, behind: bool):
        queued.append((n, behind))
        return medians(n, behind)

    found = steady.settle(start_block, tolerance=0.01, max_s=10.0, wall=FakeWall(0.001))
    assert found.settled and found.block_medians_s[-1] == pytest.approx(1.004e-3)
    assert len(found.block_medians_s) == 5
    # One block always queued ahead of the one read, so the GPU never idles between them.
    assert [behind for _, behind in queued] == [False] + [True] * 5
    # Each wall() call advances 1 ms, a block's wall is one step: 20 ms / (1 ms / n); the
    # block queued while one is read keeps the size known before it.
    assert [n for n, _ in queued] == [1, 1, 20, 20, 400, 400]
    assert found.calls == sum(n for n, _ in queued)  # the last one drained, not counted
    drifting = (1e-3 * (1 + 0.05 * i) for i in range(1000))
    capped = steady.settle(blocks_of(drifting), 0.01, 0.1, wall=FakeWall(0.03))
    assert not capped.settled and capped.seconds >= 0.1
    # Blocks that read no time (a graph's difference lost in its flushes) never agree.
    nothing = steady.settle(blocks_of(iter([0.0] * 1000)), 0.01, 0.1, wall=FakeWall(0.03))
    assert not nothing.settled and nothing.seconds >= 0.1


def test_settle_runs_through_the_boost_window_before_blocks_may_agree() -> None:
    # An H200 after a pause: 0.1 s at boost clocks (blocks agree there), then its power
    # cap takes hold and the kernel steps 8% slower (docs/steady/series-h200.png).
    def boost_then_capped(wall: FakeWall) -> Callable:
        def start_block(n: int, behind: bool) -> Callable[[], list[float]]:
            seconds = 1.0e-3 if wall.now < 0.1 else 1.08e-3
            return lambda: [seconds] * n
        return start_block

    wall = FakeWall(0.01)
    early = steady.settle(boost_then_capped(wall), 0.01, 1.0, wall=wall)
    assert early.settled and early.block_medians_s[-1] == pytest.approx(1.0e-3)
    wall = FakeWall(0.01)
    found = steady.settle(boost_then_capped(wall), 0.01, 1.0, wall=wall, min_s=0.15)
    assert found.settled and found.seconds >= 0.15
    assert found.block_medians_s[-2:] == pytest.approx([1.08e-3, 1.08e-3])
    # The floor outlasts a cap shorter than itself (a turn's share of settle_s).
    floor = steady.settle(blocks_of([1e-3] * 10_000), 0.01, 0.05, wall=FakeWall(0.01),
                          min_s=0.15)
    assert floor.settled and floor.seconds >= 0.15


def test_settle_looks_for_agreement_past_the_floor_for_up_to_its_cap() -> None:
    # Still stepping when the floor passes (a turn behind a heavy cell), steady from 0.18 s.
    def stepping_until(steady_from: float, wall: FakeWall) -> Callable:
        def start_block(n: int, behind: bool) -> Callable[[], list[float]]:
            seconds = 1.4e-3 if wall.now >= steady_from else 1e-3 * (1 + 2 * wall.now)
            return lambda: [seconds] * n
        return start_block

    wall = FakeWall(0.01)
    found = steady.settle(stepping_until(0.18, wall), 0.01, 0.1, wall=wall, min_s=0.15)
    assert found.settled and 0.18 < found.seconds < 0.25
    assert found.block_medians_s[-2:] == pytest.approx([1.4e-3, 1.4e-3])
    # A phase that never agrees stops at the floor plus its cap, recorded as not settled.
    wall = FakeWall(0.01)
    never = steady.settle(stepping_until(9.0, wall), 0.01, 0.05, wall=wall, min_s=0.15)
    assert not never.settled and 0.2 <= never.seconds < 0.22


def test_settle_waits_for_the_clock_as_well_as_the_time() -> None:
    # The kernel's time agrees from the third block on, but the clock is still climbing
    # back from a power-capped predecessor until the fifth; a 15 MHz dither is steady.
    clocks = iter([1470.0, 1515.0, 1620.0, 1800.0, 1965.0, 1980.0, 1965.0])
    steady_time = blocks_of([1e-3] * 10_000)
    found = steady.settle(steady_time, 0.01, 10.0, wall=FakeWall(0.001),
                          read_clock=lambda: Reading(next(clocks), 0), wait_for_clock=True)
    assert found.settled and found.block_clocks_mhz == [1470.0, 1515.0, 1620.0, 1800.0,
                                                        1965.0, 1980.0]
    # Without `timer.settle_clock` the clocks are only recorded.
    clocks = iter([1470.0, 1515.0, 1620.0])
    recorded = steady.settle(steady_time, 0.01, 10.0, wall=FakeWall(0.001),
                             read_clock=lambda: Reading(next(clocks), 0))
    assert recorded.settled and recorded.block_clocks_mhz == [1470.0, 1515.0, 1620.0]
    without = steady.settle(steady_time, 0.01, 10.0, wall=FakeWall(0.001))
    assert without.settled and len(without.block_medians_s) == 3
    assert without.block_clocks_mhz == []


def test_unsteady_is_a_spread_of_round_medians_beyond_the_tolerance() -> None:
    assert steady.round_spread([1.0, 1.05, 1.02]) == pytest.approx(0.05)
    assert steady.is_unsteady(steady.round_spread([1.0, 1.05]), 0.03)
    assert not steady.is_unsteady(steady.round_spread([1.0, 1.02]), 0.03)
    assert not steady.is_unsteady(steady.round_spread([1.0]), 0.03)  # one round cannot disagree
    assert steady.round_spread([1.0]) is None


def test_blocks_carry_their_nvml_reading() -> None:
    reading = Reading(1755.0, 0x4, power_w=690.5)
    block = steady.Block.of([1e-3, 2e-3, 3e-3], reading)
    assert block.as_dict() == {
        "samples": 3,
        "median_s": 2e-3,
        "sm_clock_mhz": 1755.0,
        "power_w": 690.5,
        "clock_event_reasons": ["sw_power_cap"],
    }


def test_a_batch_queued_behind_another_holds_only_when_the_host_is_slower(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    device = FakeDevice(clock)

    class SlowHost(gpu_hold.HostPace):  # 50 us of host time per sample against a 10 us kernel
        def enqueued(self, n: int, seconds: float) -> None:
            super().enqueued(n, 50e-6 * n)

    kernel = _kernel(clock, 10e-6)
    spec = TimerSpec(warmup_s=0.0, min_samples=40, settle_s=0.0)
    timer = cuda.EventTimer(device)
    with monkeypatch.context() as patched:
        patched.setattr(gpu_hold, "HostPace", SlowHost)
        timer.measure(kernel, spec)
    # every batch was held, the later ones by what the host lost over them: 50 us a sample
    # against the GPU's 10 us kernel plus its 30 us flush
    assert spec.l2 == "cold" and device.flush_s == 30e-6
    assert len(device.holds) >= 3
    assert device.holds[-1] == pytest.approx(gpu_hold.HOLD_MARGIN * 10e-6 * 32, rel=0.1)
    fast = FakeDevice(Clock())
    cuda.EventTimer(fast).measure(_kernel(fast.clock, 1e-3), spec)
    # a GPU-bound kernel: the first batch is held, and the second, queued before the
    # GPU's pace is known; none after
    assert len(fast.holds) == 2


class FakeFlushTorch:
    """The few torch calls CudaDevice.flush makes, recording what ran."""

    float32 = "float32"

    def __init__(self) -> None:
        self.log: list[str] = []
        outer = self

        class Buffer:
            def numel(self) -> int:
                return 8 * MIB // 4

            def zero_(self) -> None:
                outer.log.append("zero_")

        self.buffer = Buffer()

    def empty(self, shape: object, **_: object) -> object:
        return self.buffer if shape == 8 * MIB // 4 else "small"

    def sum(self, buffer: object, dim: int, out: object) -> None:
        self.log.append("sum")


def flush_device(torch: FakeFlushTorch, mode: str = "read") -> cuda_device.CudaDevice:
    device = object.__new__(cuda_device.CudaDevice)
    device._torch = torch  # type: ignore[assignment]
    device.index, device.flush_size, device.flush_mode = 0, 8 * MIB, mode
    device._buffer = device._scratch = device._partials = None
    device.flush_kernel = "torch"
    return device


@pytest.mark.parametrize(("mode", "op"), [("read", "sum"), ("write", "zero_")])
def test_the_flush_is_torchs_own_op_when_no_backend_replaced_it(
    monkeypatch: pytest.MonkeyPatch, mode: str, op: str
) -> None:
    monkeypatch.setattr(cuda_device, "operators_replaced", lambda: False)
    torch = FakeFlushTorch()
    device = flush_device(torch, mode)
    device.flush()
    device.flush()
    assert torch.log == [op, op] and device.flush_kernel == "torch"


@pytest.mark.parametrize("mode", ["read", "write"])
def test_under_a_backends_scope_the_flush_is_kernbenchs_kernel(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # FlagGems' scope replaces torch.sum and zero_ (its sum took 2.55 ms a flush on the H200).
    monkeypatch.setattr(cuda_device, "operators_replaced", lambda: True)
    launched: list[tuple[object, object, bool]] = []
    fake = type(sys)("kernbench.kernels.flush_triton")
    fake.programs = lambda n: n // 4096  # type: ignore[attr-defined]
    fake.flush = lambda buffer, partials, write: launched.append(  # type: ignore[attr-defined]
        (buffer, partials, write)
    )
    monkeypatch.setitem(sys.modules, "kernbench.kernels.flush_triton", fake)
    import kernbench.kernels  # where Triton is installed the real module may be its attribute

    monkeypatch.setattr(kernbench.kernels, "flush_triton", fake, raising=False)
    torch = FakeFlushTorch()
    device = flush_device(torch, mode)
    device.flush()
    assert torch.log == []
    assert launched == [(torch.buffer, "small", mode == "write")]
    assert device.flush_kernel == "kernbench"
    assert cuda.flush_extra(device, cold=True)["flush_kernel"] == "kernbench"


def test_a_timer_keeps_one_device_for_all_its_measurements(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A graph captured in one measurement reads that device's flush buffer in the next.
    clock = Clock()
    made: list[FakeDevice] = []

    def new_device(**_: object) -> FakeDevice:
        made.append(FakeDevice(clock))
        return made[-1]

    monkeypatch.setattr(cuda, "CudaDevice", new_device)
    spec = TimerSpec(warmup_s=0.0, min_samples=5, l2="cold")
    kernel = _kernel(clock, 2e-6)
    for timer in (cuda.GraphTimer(), cuda.EventTimer()):
        timer.measure(kernel, spec)
        timer.measure(kernel, spec)
    assert len(made) == 2


@pytest.mark.parametrize(
    ("estimates", "chosen", "asked"),
    [([6e-6], "graph", 1), ([25e-6, 6e-6], "graph", 2), ([25e-6, 30e-6], "event", 2)],
)
def test_auto_asks_again_before_it_gives_a_short_kernel_events(
    monkeypatch, estimates, chosen, asked
) -> None:
    # On the H200 one of eighteen processes read a 5 µs topk's estimate over 20 µs and
    # timed it with events (8 µs where graphs read 2.8 µs).
    left = list(estimates)
    monkeypatch.setattr(cuda, "CudaDevice", lambda: object())
    monkeypatch.setattr(cuda, "eager_estimate", lambda kernel, gpu: left.pop(0))
    timer = cuda.choose_auto(Kernel(run=lambda: None))
    assert timer.name == chosen and len(estimates) - len(left) == asked


@pytest.mark.parametrize("ahead_done", [False, True])
def test_sustained_measurements_say_what_ran_between_their_batches(ahead_done) -> None:
    # Back to back, two batches are a flush apart, as two samples are; a batch that finds
    # the one before it done is held first, and the gap says so.
    clock = Clock(ahead_done=ahead_done)
    device = FakeDevice(clock)
    spec = TimerSpec(warmup_s=0.0, settle_s=0.0, min_samples=100, budget_s=1.0, rel_ci=1e-9,
                     max_samples=200, l2="cold")
    measured = cuda.EventTimer(device).measure(_kernel(clock, 1e-3), spec)
    batches = len(measured.blocks)
    found, _, kept = measured.extra["batches_found_gpu_idle"].split()
    # All but the first were queued behind another, and one more drained at the stop.
    assert int(kept) == batches
    # A mark after each hold says whether the GPU got past it before the batch was queued.
    late, _, held = measured.extra["batches_past_hold"].split()
    assert int(held) == batches + 1
    if not ahead_done:
        assert found == "0" and late == "0"
        assert measured.extra["between_batches_s"] == pytest.approx(device.flush_s)
    else:
        assert found == kept and late == held
        assert measured.extra["between_batches_s"] > device.flush_s + min(device.holds)


def test_a_sustained_warm_up_queues_its_calls_back_to_back() -> None:
    # One call timed by the wall (each wall() read advances 1 ms here), then enough to
    # fill the warm-up queued at once: two syncs, not one per call as isolated cells get.
    log: list[str] = []
    calls = sampling.warm_up(lambda: log.append("run"), lambda: log.append("sync"), 0.02,
                             back_to_back=True, wall=FakeWall(1e-3))
    assert calls == 20 and log.count("run") == 20
    assert log == ["run", "sync"] + ["run"] * 19 + ["sync"]
    log.clear()
    calls = sampling.warm_up(lambda: log.append("run"), lambda: log.append("sync"), 0.02,
                             wall=FakeWall(1e-3))
    assert log == ["run", "sync"] * calls
    log.clear()
    assert sampling.warm_up(lambda: log.append("run"), lambda: None, 0.0005,
                            back_to_back=True, wall=FakeWall(1e-3)) == 1  # longer than asked


def test_fidelity_says_how_write_reads_against_do_bench_from_the_same_state() -> None:
    run = _fake_run("gemm-bf16-4096", 175e-6)
    run["runs"]["do_bench_nowarmup"] = [
        {"median_s": 175e-6 * 1.007, "clock_mhz": 1980.0} for _ in range(4)]
    data = {
        "provenance": {"gpu": "H200", "driver": "580", "torch": "2.11", "cuda": "12.9",
                       "triton": "3.6", "date": "2026-12-01T00:00:00Z", "flush": {}},
        "settings": {"cases": ["gemm-bf16-4096"], "reps": 4, "precondition_s": 0.2,
                     "precondition_idle_s": 0.5},
        "cases": {"gemm-bf16-4096": run},
        "ncu": {},
    }
    text = page.markdown(data)
    assert ("Against do_bench started from the same state (its warm-up, which leaves its "
            "first samples slow, left out): 0.993-0.993; medians within 1%: "
            "gemm-bf16-4096.") in text
    assert "behind 0.5 s idle and then 0.2 s of do_bench's flush" in text


@pytest.mark.parametrize(("duty", "staged", "back_to_back"), [
    ("sustained", False, True), ("sustained", True, False), ("isolated", False, False)])
def test_a_cell_warms_up_back_to_back_only_when_sustained_and_not_staged(
    duty, staged, back_to_back
) -> None:
    # A staged kernel synchronizes inside: its calls cannot queue, so it syncs per call.
    # With no warm-up time, back to back is one timed call and a closing sync (nothing
    # more fits); a sync per call is the one call and its sync.
    from types import SimpleNamespace

    log: list[str] = []
    kernel = SimpleNamespace(run=lambda: log.append("run"),
                             stage_times=(lambda: {}) if staged else None)
    device = SimpleNamespace(synchronize=lambda: log.append("sync"))
    assert sampling.warm_up_cell(kernel, device, TimerSpec(duty=duty, warmup_s=0.0)) == 1
    assert log == (["run", "sync", "sync"] if back_to_back else ["run", "sync"])
