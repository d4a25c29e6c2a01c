"""Plans: products, zips, exclusions (incl. the device), ids and counts."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from kernbench import plan as plan_module
from kernbench.analyze.metrics import call_floor_s
from kernbench.commands import plan as plan_command
from kernbench.plan import (
    CELL_OVERHEAD_S,
    ROUND_OVERHEAD_S,
    RunEstimate,
    cell_id,
    cell_round_s,
    estimate_run,
    plan,
    settle_floor_s,
)
from kernbench.spec.loader import load_bench
from kernbench.spec.models import Bench, HardwareProfile
from kernbench.spec.timer_model import TimerSpec

REPO = Path(__file__).resolve().parent.parent


def bench(**fields: Any) -> Bench:
    return Bench.model_validate({"name": "b", "description": "d", "kernel": "sleep", **fields})


def test_no_axes_is_one_cell_per_variant() -> None:
    cells = plan(bench(variants={"a": {}, "b": {"x": 1}}))
    assert [(c.id, dict(c.params), c.index) for c in cells] == [("a", {}, 0), ("b", {"x": 1}, 1)]


def test_product_in_file_order_variant_first() -> None:
    cells = plan(bench(axes={"n": [1, 2], "m": ["p", "q"]}, variants={"v": {}, "w": {}}))
    assert [c.id for c in cells] == [
        "v/n=1,m=p", "v/n=1,m=q", "v/n=2,m=p", "v/n=2,m=q",
        "w/n=1,m=p", "w/n=1,m=q", "w/n=2,m=p", "w/n=2,m=q",
    ]  # fmt: skip
    assert [c.index for c in cells] == list(range(8))


def test_mapping_axis_values_are_flattened_into_params() -> None:
    cells = plan(bench(axes={"shape": [{"M": 2, "N": 3, "K": 4}]}, dtypes=["bf16"]))
    assert cells[0].id == "default/shape=2x3x4,dtype=bf16"
    assert dict(cells[0].params) == {"M": 2, "N": 3, "K": 4, "dtype": "bf16"}
    assert dict(cells[0].axes) == {"shape": {"M": 2, "N": 3, "K": 4}, "dtype": "bf16"}


def test_zip_moves_axes_together() -> None:
    cells = plan(bench(axes={"a": [1, 2, 3], "b": [4, 5, 6], "c": [0, 1]}, zip=[["a", "b"]]))
    assert [(c.params["a"], c.params["b"], c.params["c"]) for c in cells] == [
        (1, 4, 0), (1, 4, 1), (2, 5, 0), (2, 5, 1), (3, 6, 0), (3, 6, 1),
    ]  # fmt: skip


def test_exclude_matches_every_key_and_lists() -> None:
    spec = bench(
        axes={"n": [1, 2, 3], "dtype": ["fp32", "bf16"]},
        variants={"v": {"backend": "x"}, "w": {"backend": "y"}},
        exclude=[{"n": [1, 2], "dtype": "bf16"}, {"variant": "w", "n": 3}],
    )
    assert [c.id for c in plan(spec)] == [
        "v/n=1,dtype=fp32", "v/n=2,dtype=fp32", "v/n=3,dtype=fp32", "v/n=3,dtype=bf16",
        "w/n=1,dtype=fp32", "w/n=2,dtype=fp32",
    ]  # fmt: skip


def test_exclude_names_a_mapping_axis_by_its_label_as_only_does() -> None:
    axes = {"shape": [{"M": 256, "N": 256, "K": 256}, {"M": 512, "N": 512, "K": 512}],
            "flag": [True, False]}
    spec = bench(axes=axes, exclude=[{"shape": "512x512x512", "flag": True},
                                     {"shape": ["256x256x256"]}])
    left = ["default/shape=512x512x512,flag=False"]
    assert [c.id for c in plan(spec)] == left
    assert [c.id for c in plan(bench(axes=axes), only=["shape=512x512x512", "flag=false"])] == left


def test_device_exclusions_apply_only_with_a_device() -> None:
    spec = bench(axes={"n": [1, 2]}, exclude=[{"device": "cpu", "n": 2}])
    assert len(plan(spec)) == 2
    cpu = plan(spec, "cpu")
    assert [c.id for c in cpu] == ["default/n=1"]
    assert cpu[0].params["device"] == "cpu"
    assert len(plan(spec, "cuda")) == 2


def test_cell_ids_are_stable() -> None:
    assert (
        cell_id("v", {"shape": {"M": 1, "N": 2}, "s": [3, 4], "x": True})
        == "v/shape=1x2,s=3x4,x=True"
    )
    assert cell_id("v", {}) == "v"


def test_milestone_gemm_counts() -> None:
    spec = load_bench(REPO / "benches" / "milestone-1h-gemm.yaml")
    cpu = plan(spec, "cpu")
    assert len(cpu) == 24
    assert {c.variant for c in cpu} == {"cpu_numpy", "cpu_blocked", "cpu_staged"}
    assert {c.params["dtype"] for c in cpu} == {"fp32", "fp64"}
    assert max(max(c.params["M"], c.params["N"], c.params["K"]) for c in cpu) == 2048
    assert {c.params["dtype"] for c in cpu if c.variant != "cpu_numpy"} == {"fp32"}
    cuda = plan(spec, "cuda")
    assert len(cuda) == 153
    assert {c.params["backend"] for c in cuda} == {"torch", "triton"}
    assert "fp64" not in {c.params["dtype"] for c in cuda}
    assert {c.params["dtype"] for c in cuda if c.variant == "triton"} == {"bf16", "fp16"}
    assert {c.params["dtype"] for c in cuda if c.variant.startswith("staged")} == {"bf16"}
    assert {c.variant for c in cuda if c.params["dtype"] == "fp8"} == {"resident"}


def test_the_estimate_counts_the_settle_floor_of_sustained_gpu_cells() -> None:
    sustained = bench(timer={"warmup_s": 0.05, "budget_s": 0.3, "turns": 4}, rounds=3)
    assert settle_floor_s(sustained.timer, "cuda") == pytest.approx(4 * 0.15)
    assert settle_floor_s(sustained.timer, "cpu") == 0.0  # the CPU timer does not settle
    isolated = bench(timer={"duty": "isolated", "turns": 4})
    unsettled = bench(timer={"settle_s": 0.0, "turns": 4})
    assert settle_floor_s(isolated.timer, "cuda") == settle_floor_s(unsettled.timer, "cuda") == 0
    extra = estimate_run(sustained, 10, "cuda").seconds - estimate_run(sustained, 10, "cpu").seconds
    assert extra == pytest.approx(3 * 10 * 4 * 0.15)


def test_the_estimate_counts_a_slow_cell_by_its_calls_not_the_budget() -> None:
    timer = {"warmup_s": 0.05, "budget_s": 0.3, "min_samples": 5, "turns": 4}
    spec = bench(axes={"n": [1, 2]}, timer=timer, rounds=3)
    fast = 0.05 + 0.3 + CELL_OVERHEAD_S  # warm-up and budget: the calls fit in them
    assert cell_round_s(spec.timer, "cpu") == pytest.approx(fast)
    assert cell_round_s(spec.timer, "cpu", 1e-4) == pytest.approx(fast + 4 * 1e-4 + 1e-4)
    # A 0.1 s call: each of 4 turns warms up with one call, sizes its samples with one,
    # and takes 3 samples (0.3 s past the turn's 0.075 s budget); the check is one more.
    slow = 4 * (0.1 + 0.1 + 3 * 0.1) + 0.1 + CELL_OVERHEAD_S
    assert cell_round_s(spec.timer, "cpu", 0.1) == pytest.approx(slow)
    estimate = estimate_run(spec, 2, "cpu", [0.1, 0.0])
    assert estimate.seconds == pytest.approx(3 * (slow + fast + ROUND_OVERHEAD_S))
    assert estimate.past_budget_s == pytest.approx(slow - fast)  # a round's, as plan says
    assert estimate_run(spec, 2, "cpu") == RunEstimate(
        pytest.approx(3 * (2 * fast + ROUND_OVERHEAD_S)), 0.0)


def test_the_plan_times_each_cell_round_once_for_its_estimate_line(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    rounds_timed: list[float] = []
    timed = plan_module.cell_round_s

    def counted(timer: TimerSpec, device: str, call_s: float = 0.0) -> float:
        rounds_timed.append(call_s)
        return timed(timer, device, call_s)

    monkeypatch.setattr(plan_module, "cell_round_s", counted)
    monkeypatch.setattr(plan_command, "cell_round_s", counted, raising=False)
    monkeypatch.chdir(REPO)
    cells = plan_command.show_plan("milestone-1h-gemm", "cpu", console=Console(file=io.StringIO()))
    assert len(rounds_timed) == len(cells) + 1  # each cell, and the budget alone once


def test_a_calls_floor_is_its_roofline_time_at_the_profiles_rates() -> None:
    spec = bench(axes={"n": [1000]}, dtypes=["fp32", "fp16"],
                 metrics={"flops": "2*n**3", "bytes": "3*n*n*itemsize"})
    profile = HardwareProfile.model_validate({
        "name": "p", "description": "d", "kind": "cpu",
        "peak_tflops": {"fp32": {"measured": 1.0}}, "memory_gbs": {"measured": 100.0}})
    fp32, fp16 = plan(spec, "cpu")
    assert call_floor_s(spec, fp32.params, profile) == pytest.approx(2e9 / 1e12)
    assert call_floor_s(spec, fp16.params, profile) == 0.0  # no fp16 rate: not counted
    assert call_floor_s(spec, fp32.params, None) == 0.0


def test_milestone_ccl_counts() -> None:
    spec = load_bench(REPO / "benches" / "milestone-1h-ccl.yaml")
    cpu = plan(spec, "cpu")
    assert len(cpu) == 51
    assert max(c.params["bytes"] for c in cpu) == 64 * 2**20
    assert {(c.params["dtype"], c.params["inplace"]) for c in cpu} == {("fp32", True)}
    cuda = plan(spec, "cuda")
    # no out-of-place allreduce: torch has none
    assert len(cuda) == 3 * 21 * 2 * 2 - 21 * 2
    assert max(c.params["bytes"] for c in cuda) == 2**30


def test_select_filters_by_parameters_and_variant_keeping_indices() -> None:
    from kernbench.errors import UserError
    from kernbench.plan import select

    spec = load_bench(REPO / "benches" / "milestone-1h-gemm.yaml")
    cells = plan(spec, "cuda")
    chosen = select(cells, ["variant=triton,resident", "M=4096", "dtype=bf16"])
    assert {c.variant for c in chosen} == {"triton", "resident"}
    assert all(c.params["M"] == 4096 and c.params["dtype"] == "bf16" for c in chosen)
    assert [c.index for c in chosen] == sorted(c.index for c in chosen)
    assert select(cells, ["autotune=true"]) == [c for c in cells if c.params.get("autotune")]
    with pytest.raises(UserError, match="unknown key 'Q'; known: K, M, N"):
        select(cells, ["Q=1"])
    # the error lists the values the key takes
    with pytest.raises(UserError, match="^--only: no cell has M=3; M takes 256, 512, 1024, "):
        select(cells, ["M=3"])
    with pytest.raises(UserError, match="^--only: no cell has variant=tritn; variant takes "
                       "resident, staged_pinned, staged_pageable, triton$"):
        select(cells, ["variant=tritn"])
    # a typo among values that match is no less a typo; an empty value is malformed
    with pytest.raises(UserError, match="^--only: no cell has M=3,5; M takes "):
        plan(spec, "cuda", ["M=4096,3,5"])
    with pytest.raises(UserError, match="is not KEY=VALUE"):
        plan(spec, "cuda", ["M=4096,,2048"])
    # values each some cell has, but no cell together
    together = "^--only: no cell matches dtype=fp8 variant=staged_pageable$"
    with pytest.raises(UserError, match=together):
        plan(spec, "cuda", ["dtype=fp8", "variant=staged_pageable"])
    with pytest.raises(UserError, match="is not KEY=VALUE"):
        select(cells, ["M"])


def test_shards_are_disjoint_and_cover_the_plan() -> None:
    from kernbench.errors import UserError
    from kernbench.plan import shard

    cells = plan(load_bench(REPO / "benches" / "milestone-1h-gemm.yaml"), "cuda")
    parts = [shard(cells, f"{i}/4") for i in range(1, 5)]
    indices = [c.index for part in parts for c in part]
    assert sorted(indices) == [c.index for c in cells]
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1
    for bad in ("0/4", "5/4", "2", "a/b"):
        with pytest.raises(UserError, match="--shard"):
            shard(cells, bad)
