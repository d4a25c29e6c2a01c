from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernbench.kernels.base import Kernel
from kernbench.kernels.collective import make
from kernbench.spec.timer_model import TimerSpec
from kernbench.timing import choose_timer
from kernbench.timing.ranks import RanksTimer, next_chunk

REPO = Path(__file__).resolve().parents[1]
FAST = TimerSpec(warmup_s=0.005, budget_s=0.02, min_samples=5, max_samples=40)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"op": "alltoall", "bytes": 1024}, "unknown op 'alltoall'; known: allreduce"),
        ({"op": "allreduce", "bytes": 1024, "inplace": False}, "no out-of-place form"),
        ({"op": "allreduce", "bytes": 1026}, r"multiple of the item size \(4\)"),
        (
            {"op": "allgather", "bytes": 1028, "world_size": 8, "dtype": "bf16"},
            r"multiple of world_size × item size \(16\) for allgather",
        ),
        ({"op": "allreduce", "bytes": 1024, "dtype": "fp8"}, "dtype 'fp8' is not supported"),
        ({"op": "allreduce", "bytes": 1024, "device": "mps"}, "unknown device 'mps'"),
    ],
)
def test_bad_cells_fail_with_a_reason(params: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(**params)  # type: ignore[arg-type]


def test_more_ranks_than_running_is_an_error() -> None:
    with pytest.raises((RuntimeError, ValueError), match="world_size=2"):
        make(op="allreduce", bytes=1024, world_size=2)


CASES = [
    (op, inplace, dtype)
    for op in ("allreduce", "allgather", "reduce_scatter")
    for inplace in (True, False)
    for dtype in ("fp32", "bf16")
    if inplace or op != "allreduce"
]


@pytest.mark.parametrize(("op", "inplace", "dtype"), CASES)
def test_one_rank_checks_exactly_and_is_timed_by_the_ranks_timer(
    op: str, inplace: bool, dtype: str
) -> None:
    kernel = make(op=op, bytes=4096, world_size=1, inplace=inplace, dtype=dtype)
    try:
        assert kernel.check is not None
        check = kernel.check()
        assert (check.rel_err, check.tolerance) == (0.0, 0.0)
        assert kernel.measure is None and kernel.ranks is not None
        timer = choose_timer(kernel, FAST, "cpu")
        assert isinstance(timer, RanksTimer)
        measurement = timer.measure(kernel, FAST)
    finally:
        assert kernel.close is not None
        kernel.close()
    assert measurement.timer == "collective"
    assert FAST.min_samples <= len(measurement.samples_s) <= FAST.max_samples
    assert all(t > 0 for t in measurement.samples_s)
    assert measurement.extra["world_size"] == 1 and measurement.extra["backend"] == "gloo"
    assert len(measurement.extra["per_rank_median_s"]) == 1
    assert measurement.warmup_calls >= 2


def test_a_collective_that_does_nothing_fails_its_check() -> None:
    kernel = make(op="allgather", bytes=4096, world_size=1, inplace=False)
    collective = kernel.run.__self__  # type: ignore[attr-defined]
    collective._call = lambda: None  # the output keeps its zeros
    assert kernel.check is not None
    check = kernel.check()
    assert check.rel_err == pytest.approx(1.0) and not check.ok


def test_sums_past_the_exact_range_get_the_dtype_tolerance() -> None:
    kernel = make(op="allreduce", bytes=4096, world_size=1, dtype="bf16")
    collective = kernel.run.__self__  # type: ignore[attr-defined]
    collective.world_size = 65  # as if: 4 × 65 = 260 > 256, bf16's last exact integer
    assert collective.check().tolerance == pytest.approx(2e-2)


def test_chunks_cover_min_samples_then_grow_within_limits() -> None:
    spec = TimerSpec(min_samples=10, max_samples=100, budget_s=1.0)
    assert next_chunk(0, spec, 0.0, 1e-3) == 10
    assert next_chunk(40, spec, 0.04, 1e-3) == 20
    assert next_chunk(90, spec, 0.09, 1e-3) == 10  # max_samples
    assert next_chunk(40, spec, 0.9995, 1e-3) == 1  # budget nearly spent


class TwoRanks:
    """A RankGroup on one process: the peer rank takes `peer_factor` times as long."""

    world_size = 2
    backend = "fake"

    def __init__(self, per_call_s: list[float], peer_factor: float = 2.0) -> None:
        self.per_call_s = per_call_s  # this rank's time per call, one per batch, cycled
        self.peer_factor = peer_factor
        self.batches = 0
        self.barriers = 0

    def barrier(self) -> None:
        self.barriers += 1

    def timing_info(self) -> dict:
        return {}

    def time_batches(
        self, count: int, reps: int, duty: str = "sustained", l2: str = "cold"
    ) -> list[float]:
        times = []
        for _ in range(count):
            times.append(reps * self.per_call_s[self.batches % len(self.per_call_s)])
            self.batches += 1
        return times

    def agree_max(self, values: list[float]) -> list[float]:
        return [v * max(1.0, self.peer_factor) for v in values]

    def per_rank(self, value: float) -> list[float]:
        return [value, value * self.peer_factor]


def ranks_kernel(ranks: TwoRanks) -> Kernel:
    return Kernel(run=lambda: None, ranks=ranks)


def test_the_ranks_timer_samples_the_slowest_rank_in_batches_of_about_a_millisecond() -> None:
    ranks = TwoRanks([1e-5])
    spec = TimerSpec(warmup_s=0.0, min_samples=10, max_samples=1000, budget_s=1.0)
    measured = RanksTimer().measure(ranks_kernel(ranks), spec)
    assert ranks.barriers == 1
    # Warm-up batches double (1, 2, 4, 8, 16 calls, after one untimed call) until one is a
    # quarter of the 1 ms target at the slowest rank's 20 µs per call; then two sustained
    # samples of 50 calls probe the time per call.
    assert measured.warmup_calls == 1 + 1 + 2 + 4 + 8 + 16 + 2 * 50
    assert measured.extra["calls_per_sample"] == 50  # 1 ms / 20 µs
    assert measured.samples_s == pytest.approx([2e-5] * len(measured.samples_s))
    assert measured.stop_reason == "converged" and len(measured.samples_s) == 10
    assert measured.timer == "collective"
    assert measured.extra["per_rank_median_s"] == pytest.approx([1e-5, 2e-5])
    assert (measured.extra["world_size"], measured.extra["backend"]) == (2, "fake")


class HostBound(TwoRanks):
    """Eager (isolated) calls paced by the host at 4x the GPU's time per call, as small
    collectives are through torch.distributed; sustained samples at the GPU's own."""

    def time_batches(
        self, count: int, reps: int, duty: str = "sustained", l2: str = "cold"
    ) -> list[float]:
        times = super().time_batches(count, reps, duty)
        return [4 * t for t in times] if duty == "isolated" else times


def test_sustained_samples_are_sized_from_a_sustained_probe_not_the_eager_warm_up() -> None:
    spec = TimerSpec(warmup_s=0.0, min_samples=10, max_samples=1000, budget_s=1.0)
    measured = RanksTimer().measure(ranks_kernel(HostBound([1e-5])), spec)
    # Eager: 80 µs a call (the slowest rank's), which alone would give 12 calls a sample;
    # the probe of 12 sustained calls reads 20 µs each: 50 calls make the 1 ms sample.
    assert measured.extra["calls_per_sample"] == 50
    assert measured.samples_s == pytest.approx([2e-5] * len(measured.samples_s))
    isolated = spec.model_copy(update={"duty": "isolated"})
    measured = RanksTimer().measure(ranks_kernel(HostBound([1e-5])), isolated)
    assert measured.extra["calls_per_sample"] == 1
    assert measured.samples_s == pytest.approx([8e-5] * len(measured.samples_s))


def test_the_ranks_timer_spends_the_budget_in_agreed_time_then_stops() -> None:
    noisy = [1e-5 * (1 + (i * 0.618034) % 1) for i in range(97)]
    spec = TimerSpec(warmup_s=0.0, min_samples=10, rel_ci=1e-6, budget_s=0.05)
    measured = RanksTimer().measure(ranks_kernel(TwoRanks(noisy)), spec)
    assert measured.stop_reason == "budget"
    reps = measured.extra["calls_per_sample"]
    spent = sum(measured.samples_s) * reps
    assert spec.budget_s <= spent < 2 * spec.budget_s


def test_the_ranks_timer_keeps_a_block_with_the_gpu_state_per_chunk() -> None:
    from kernbench.timing.nvml import Reading

    readings = iter([Reading(1980.0, 0, 300.0), Reading(1410.0, 0x4, 690.0)] * 50)
    noisy = [1e-5 * (1 + (i * 0.618034) % 1) for i in range(97)]
    spec = TimerSpec(warmup_s=0.0, min_samples=10, rel_ci=1e-6, budget_s=0.05)
    measured = RanksTimer(read_clock=lambda: next(readings)).measure(
        ranks_kernel(TwoRanks(noisy)), spec)
    assert len(measured.blocks) >= 2
    assert sum(b["samples"] for b in measured.blocks) == len(measured.samples_s)
    first, second = measured.blocks[:2]
    assert (first["sm_clock_mhz"], first["power_w"], first["clock_event_reasons"]) == (
        1980.0, 300.0, [])
    assert second["clock_event_reasons"] == ["sw_power_cap"]
    assert measured.sm_clock_mhz[: first["samples"]] == [1980.0] * first["samples"]
    assert measured.throttled[first["samples"]] is True


def test_the_ranks_timer_is_chosen_for_a_kernel_with_ranks_on_any_device() -> None:
    kernel = ranks_kernel(TwoRanks([1e-5]))
    for kind in ("auto", "cpu", "event", "graph"):
        assert isinstance(choose_timer(kernel, TimerSpec(kind=kind), "cpu"), RanksTimer)
        assert isinstance(choose_timer(kernel, TimerSpec(kind=kind), "cuda"), RanksTimer)


@pytest.mark.slow
def test_modules_import_without_torch() -> None:
    code = (
        "import sys\n"
        "import kernbench.execute.launch, kernbench.kernels.collective\n"
        "import kernbench.analyze.collective\n"
        "import kernbench.render.ccl\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.slow
def test_two_gloo_ranks_check_and_time_every_op(tmp_path: Path) -> None:
    from collective_ranks import run_two_gloo_ranks

    out = tmp_path / "seen.json"
    done = run_two_gloo_ranks("cells", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(out.read_text())
    assert {(s["params"]["op"], s["params"]["dtype"]) for s in seen} == {
        ("allreduce", "fp32"),
        ("allreduce", "bf16"),
        ("allgather", "fp32"),
        ("allgather", "bf16"),
        ("reduce_scatter", "bf16"),
        ("reduce_scatter", "fp32"),
    }
    for cell in seen:
        assert cell["ok"] and cell["rel_err"] == 0.0, cell
        assert cell["samples"] >= 5 and cell["median_s"] > 0
        assert cell["extra"]["world_size"] == 2 and cell["extra"]["backend"] == "gloo"
        assert len(cell["extra"]["per_rank_median_s"]) == 2
        # The cell's sample is the slowest rank's: never under either rank's own median.
        assert cell["median_s"] >= min(cell["extra"]["per_rank_median_s"])


def test_the_ranks_timer_batches_calls_when_sustained_and_takes_one_when_isolated() -> None:
    seen: list[tuple[int, str]] = []

    class Recording(TwoRanks):
        def time_batches(
            self, count: int, reps: int, duty: str = "sustained", l2: str = "cold"
        ) -> list[float]:
            seen.append((reps, duty))
            return super().time_batches(count, reps, duty)

        def timing_info(self) -> dict:
            return {"graph_ops": [100]}

    spec = TimerSpec(warmup_s=0.0, min_samples=5, budget_s=0.01)
    measured = RanksTimer().measure(ranks_kernel(Recording([1e-5])), spec)
    sampled = [(reps, duty) for reps, duty in seen if duty == "sustained"]
    assert sampled and all(reps == 50 for reps, _ in sampled)  # 1 ms of 20 us (peer's) calls
    assert measured.duty == "sustained" and measured.extra["graph_ops"] == [100]
    assert all(duty == "isolated" for reps, duty in seen[: len(seen) - len(sampled)])
    seen.clear()
    isolated = spec.model_copy(update={"duty": "isolated"})
    measured = RanksTimer().measure(ranks_kernel(Recording([1e-5])), isolated)
    assert measured.duty == "isolated" and measured.extra["calls_per_sample"] == 1


def test_the_api_is_the_cells_then_the_environments_then_the_devices(monkeypatch) -> None:
    from kernbench.kernels.collective import API_ENV, resolve_api

    monkeypatch.delenv(API_ENV, raising=False)
    # CUDA times NCCL itself (nccl-tests' numbers); gloo has only torch.distributed.
    assert (resolve_api(None, "cuda"), resolve_api(None, "cpu")) == ("nccl", "torch")
    monkeypatch.setenv(API_ENV, "torch")
    assert resolve_api(None, "cuda") == "torch"
    assert resolve_api("nccl", "cuda") == "nccl"
    monkeypatch.setenv(API_ENV, "nccl")
    with pytest.raises(ValueError, match="needs device cuda"):
        resolve_api(None, "cpu")
    with pytest.raises(ValueError, match="unknown api 'mpi'"):
        resolve_api("mpi", "cuda")


def test_sustained_samples_replay_graphs_unless_the_environment_says(monkeypatch) -> None:
    from kernbench.kernels.collective_graphs import GRAPHS_ENV, captures_graphs

    monkeypatch.delenv(GRAPHS_ENV, raising=False)
    assert captures_graphs()
    monkeypatch.setenv(GRAPHS_ENV, "0")
    assert not captures_graphs()


def test_nccls_calls_are_captured_by_the_driver_and_torchs_by_torch(monkeypatch) -> None:
    from kernbench.kernels.collective_graphs import CAPTURE_ENV, capture_mode

    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    assert (capture_mode("nccl"), capture_mode("torch")) == ("driver", "torch")
    monkeypatch.setenv(CAPTURE_ENV, "torch")
    assert capture_mode("nccl") == "torch"
    monkeypatch.setenv(CAPTURE_ENV, "cupy")
    with pytest.raises(ValueError, match="KERNBENCH_COLLECTIVE_CAPTURE='cupy'; known: torch"):
        make(op="allreduce", bytes=1024)


def test_nccls_graph_mixing_is_off_unless_the_environment_sets_it(monkeypatch) -> None:
    from kernbench.kernels.collective_graphs import MIXING_ENV, nccl_settings, prepare_nccl

    monkeypatch.setenv(MIXING_ENV, "")  # recorded, so prepare_nccl's value is undone after
    monkeypatch.delenv(MIXING_ENV)
    assert nccl_settings() == {"nccl_graph_mixing_support": "1 (NCCL's default)"}
    prepare_nccl()
    assert nccl_settings() == {"nccl_graph_mixing_support": "0"}
    monkeypatch.setenv(MIXING_ENV, "1")
    prepare_nccl()
    assert nccl_settings() == {"nccl_graph_mixing_support": "1"}


def test_a_cold_ring_of_graphs_reaches_every_slot_up_to_its_cap() -> None:
    from kernbench.kernels.collective_buffers import rotation_slots
    from kernbench.kernels.collective_graphs import GRAPH_CALLS, MAX_GRAPH_RING, graph_ring

    l2 = 60 * 2**20
    assert graph_ring(1) == 1
    assert graph_ring(rotation_slots(4 * 2**20, l2)) == 3  # 30 slots: every one
    assert graph_ring(rotation_slots(3 * 2**20, l2)) * GRAPH_CALLS == 40  # every one
    assert graph_ring(rotation_slots(2 * 2**20, l2)) == MAX_GRAPH_RING  # 50 of 60 slots
    assert graph_ring(rotation_slots(2**10, l2)) * GRAPH_CALLS == 50  # as nccl-tests' -G


def test_sustained_samples_replay_short_graphs_that_add_up_to_the_sample() -> None:
    from kernbench.kernels import collective_cuda, gpu_hold

    captured: list[tuple[int, int]] = []

    class Batches(collective_cuda.CudaBatches):
        def __init__(self, fail_at: int | None = None) -> None:  # no CUDA here
            self.fail_at = fail_at
            self._capture, self._replayed, self.graph_failure = True, [], None
            self._capture_by, self._graphs, self._capture_s = "torch", {}, 0.25
            self._pace, self._ring_next, self._ring = gpu_hold.HostPace(), {}, 1
            self._past_hold = gpu_hold.PastHold()
            self._past_hold.batches, self._past_hold.late = 4, 1

        def _graph(self, call: object, reps: int, index: int = 0) -> object | None:
            captured.append((reps, index))
            if reps == self.fail_at:
                self.graph_failure = "capture failed"
                return None
            return f"graph {index} of {reps}"

    unit = collective_cuda.GRAPH_CALLS
    batches = Batches()
    graphs = batches._replays(print, 2 * unit + 3, ring=1)
    assert graphs == [f"graph 0 of {unit}", f"graph 0 of {unit}", "graph 0 of 3"]
    batches._pace.enqueued(4, 8e-3)
    batches._pace.ran([1e-3, 1e-3])
    assert batches.info() == {"sustained_body": "graph", "graph_ops": [unit, unit, 3],
                              "graph_ring": 1, "graph_capture": "torch", "graphs_captured": 0,
                              "graph_capture_s": 0.25, "host_enqueue_s": 2e-3,
                              "gpu_sample_s": 1e-3, "batches_past_hold": "1 of 4"}
    assert Batches()._replays(print, unit, ring=1) == [f"graph 0 of {unit}"]
    assert Batches()._replays(print, 4, ring=1) == ["graph 0 of 4"]
    failing = Batches(fail_at=3)
    assert failing._replays(print, unit + 3, ring=1) is None  # the sample runs eager calls
    assert failing.info() == {"sustained_body": "eager", "graph_capture_failed": "capture failed"}


def test_cold_samples_rotate_through_the_ring_of_graphs_across_samples() -> None:
    from kernbench.kernels import collective_cuda

    class Batches(collective_cuda.CudaBatches):
        def __init__(self) -> None:  # no CUDA here
            self._capture, self._replayed, self.graph_failure = True, [], None
            self._ring_next, self._ring = {}, 1

        def _graph(self, call: object, reps: int, index: int = 0) -> object | None:
            return (reps, index)

    unit = collective_cuda.GRAPH_CALLS
    batches = Batches()
    first = batches._replays(print, 2 * unit + 1, ring=3)
    second = batches._replays(print, 2 * unit + 1, ring=3)
    assert first == [(unit, 0), (unit, 1), (1, 0)]
    assert second == [(unit, 2), (unit, 0), (1, 0)]  # on round the ring, not back to its start
    assert batches._replays(len, unit, ring=3) == [(unit, 0)]  # each call has a ring of its own


def test_ranks_that_would_split_a_batch_differently_call_the_same_collectives_and_count_late_ones(
    monkeypatch,
) -> None:
    """Each sub-batch of samples starts with a GPU barrier (a collective): a rank whose
    host paces more samples per hold than its peer's must still call it as often. Each
    sub-batch whose hold ended before the host had queued it is counted late."""
    from types import SimpleNamespace

    from kernbench.kernels import collective_cuda, gpu_hold

    monkeypatch.setattr(gpu_hold, "hold", lambda seconds: None)
    hold_ended = [False]

    class Event:
        def record(self) -> None: ...

        def query(self) -> bool:
            return hold_ended[0]  # before the host had queued the batch

        def elapsed_time(self, end: Event) -> float:
            return 1.0  # ms

    class Pace:  # this rank's host fits `fits` samples under one hold
        def __init__(self, fits: int) -> None:
            self.fits = fits

        def fitting(self, n: int) -> int:
            return min(n, self.fits)

        def hold_for(self, n: int) -> float:
            return 0.0

        def enqueued(self, n: int, seconds: float) -> None: ...

        def ran(self, seconds: list[float]) -> None: ...

    def rank_log(own_fits: int, peer_fits: int, duty: str) -> list[str]:
        late = 4 if hold_ended[0] else 0  # of the 4 sub-batches (3+3+3+1)
        log: list[str] = []
        sync_buffer = object()

        def all_reduce(tensor: object, op: object = None) -> None:
            if tensor is sync_buffer:
                log.append("barrier")
            else:  # the sub-batch agreement: MIN with the peer's value
                tensor.value = min(tensor.value, peer_fits)  # type: ignore[attr-defined]

        class Value:
            def __init__(self, values: list[int], **_: object) -> None:
                self.value = values[0]

            def item(self) -> int:
                return self.value

        torch = SimpleNamespace(tensor=Value, int64="int64", cuda=SimpleNamespace(
            Event=lambda enable_timing=False: Event(), synchronize=lambda: None))
        batches = object.__new__(collective_cuda.CudaBatches)
        batches.__dict__.update(
            _torch=torch, _dist=SimpleNamespace(all_reduce=all_reduce,
                                                ReduceOp=SimpleNamespace(MIN="min")),
            _capture=False, _sync_buffer=sync_buffer,
            _graphs={}, _replayed=[], _pace=Pace(own_fits), graph_failure=None,
            _past_hold=gpu_hold.PastHold())
        assert batches.time(10, 2, duty, lambda: log.append("call")) == [1e-3] * 10
        assert (batches._past_hold.late, batches._past_hold.batches) == (late, 4)
        return log

    for duty in ("sustained", "isolated"):
        fast_host, slow_host = rank_log(7, 3, duty), rank_log(3, 7, duty)
        assert fast_host == slow_host
        barriers = fast_host.count("barrier")
        assert barriers == (4 if duty == "sustained" else 10)  # sub-batches 3+3+3+1
        assert fast_host.count("call") == 20
    hold_ended[0] = True  # a host that fell behind its hold: every batch counted late
    rank_log(3, 3, "sustained")
