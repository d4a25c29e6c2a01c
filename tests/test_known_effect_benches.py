"""The known-effect A/B benches (ab-known-effect, ab-drift) and scripts/ab_reference.py, on
the CPU: they validate, plan, and their factories show the switch's effect."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from script_modules import load_script

from kernbench.kernels import resolve_factory
from kernbench.kernels.base import as_kernel
from kernbench.plan import plan
from kernbench.spec.loader import load_bench

ROOT = Path(__file__).resolve().parents[1]
BENCHES = ROOT / "benches"
KNOWN = BENCHES / "ab-known-effect.yaml"
DRIFT = BENCHES / "ab-drift.yaml"


def factory_of(path: Path) -> Callable[..., object]:
    return resolve_factory(load_bench(path).kernel, path.parent)


def build(path: Path, monkeypatch, switch: str, value: str, **params) -> Callable[[], object]:
    monkeypatch.setenv(switch, value)
    return factory_of(path)(**params)


@pytest.mark.parametrize("path", [KNOWN, DRIFT])
def test_the_benches_validate_and_name_their_switch(path):
    bench = load_bench(path)
    assert bench.ab is not None and bench.ab.aa
    source = (path.parent / f"{bench.kernel.split(':')[0]}.py").read_text()
    assert bench.ab.switch in source  # so `kernbench ab` finds the switch read


def test_known_effect_plans_a_control_and_three_effects_on_each_device():
    bench = load_bench(KNOWN)
    cuda = plan(bench, "cuda")
    assert len(cuda) == 12
    assert {cell.variant for cell in cuda} == {"none", "plus2", "plus5", "plus10"}
    assert {cell.params["dtype"] for cell in cuda} == {"bf16"}
    cpu = plan(bench, "cpu")
    assert len(cpu) == 8
    assert {cell.params["dtype"] for cell in cpu} == {"fp32"}
    assert max(cell.params["M"] for cell in cpu) <= 128


def test_drift_plans_a_control_and_an_effect():
    cells = plan(load_bench(DRIFT), "cpu")
    assert {cell.variant: cell.params["effect_pct"] for cell in cells} == {
        "control": 0,
        "slow3": 3,
    }


CPU_GEMM = {"batch": 100, "M": 64, "N": 64, "K": 64, "dtype": "fp32", "device": "cpu"}


@pytest.mark.parametrize("value", ["0", "1"])
def test_known_effect_checks_against_float64_and_sizes_the_extra_work(monkeypatch, value):
    kernel = as_kernel(build(KNOWN, monkeypatch, "KB_EXTRA_WORK", value, extra_pct=10, **CPU_GEMM))
    result = kernel.check()
    assert result.ok and result.rel_err > 0  # computed, not copied
    assert kernel.info["extra_matrices"] == (10 if value == "1" else 0)
    control = as_kernel(build(KNOWN, monkeypatch, "KB_EXTRA_WORK", value, extra_pct=0, **CPU_GEMM))
    assert control.info["extra_matrices"] == 0


def test_known_effect_never_times_zeros(monkeypatch):
    kernel = as_kernel(build(KNOWN, monkeypatch, "KB_EXTRA_WORK", "1", extra_pct=5, **CPU_GEMM))
    gemm = kernel.run.__self__  # the BatchedGemm whose operands are timed
    for operand in (gemm.a, gemm.b):
        assert operand.count_nonzero() > 0.99 * operand.numel()
        assert operand.std() == pytest.approx(1.0, rel=0.1)


def test_known_effect_switch_gives_the_plus10_variant_a_tenth_more_gemms(monkeypatch):
    # Counted, not timed: a wall-clock ratio on a shared 2-core machine is a flaky test;
    # the A/Bs on a GPU measure the effect itself (docs/ab-schedules.md).
    import torch

    multiplied: list[int] = []
    bmm = torch.bmm

    def counting(a, b, **kwargs):
        multiplied.append(a.shape[0])
        return bmm(a, b, **kwargs)

    matrices = {}
    for value in ("0", "1"):
        run = build(KNOWN, monkeypatch, "KB_EXTRA_WORK", value, extra_pct=10, **CPU_GEMM).run
        monkeypatch.setattr(torch, "bmm", counting)
        multiplied.clear()
        run()
        matrices[value] = sum(multiplied)
        monkeypatch.setattr(torch, "bmm", bmm)
    assert matrices == {"0": 100, "1": 110}


def record_spins(monkeypatch, now: float) -> list[float]:
    """Replace the drift kernel's spin by a recorder and freeze its wall clock."""
    module = inspect.getmodule(factory_of(DRIFT))
    asked: list[float] = []
    monkeypatch.setattr(module, "spin", asked.append)
    monkeypatch.setattr(module, "time", SimpleNamespace(time=lambda: now))
    return asked


@pytest.mark.parametrize(("effect_pct", "expected"), [(0, 1.0), (3, 1.03)])
def test_drift_switch_adds_exactly_the_effect(monkeypatch, effect_pct, expected):
    asked = record_spins(monkeypatch, now=0.0)  # sin(0) = 0: the wave's mean
    build(DRIFT, monkeypatch, "KB_DRIFT_SLOW", "0", work_us=1000, effect_pct=effect_pct)()
    build(DRIFT, monkeypatch, "KB_DRIFT_SLOW", "1", work_us=1000, effect_pct=effect_pct)()
    plain, switched = asked
    assert plain == pytest.approx(1e-3)
    assert switched / plain == pytest.approx(expected)


def test_drift_follows_the_wall_clock_wave(monkeypatch):
    module = inspect.getmodule(factory_of(DRIFT))
    quarter = module.PERIOD_S / 4
    asked = record_spins(monkeypatch, now=quarter)  # the wave's crest
    build(DRIFT, monkeypatch, "KB_DRIFT_SLOW", "0", work_us=1000)()
    assert asked == [pytest.approx(1e-3 * (1 + module.AMPLITUDE))]


def reference_script():
    return load_script("ab_reference")


def test_reference_script_measures_the_drift_effect_in_one_process(tmp_path, capsys):
    out = tmp_path / "ref.json"
    argv = ["--bench", str(DRIFT), "--device", "cpu", "--pairs", "20", "--calls-per-turn", "3"]
    argv += ["--only", "work_us=1000", "--only", "variant=slow3", "--out", str(out)]
    assert reference_script().main(argv) == 0
    document = json.loads(out.read_text())
    assert (document["switch"], document["a"], document["b"]) == ("KB_DRIFT_SLOW", "0", "1")
    [cell] = document["cells"]
    assert cell["id"] == "slow3/work_us=1000"
    assert len(cell["pair_deltas_pct"]) == 20 and cell["calls_per_turn"] == 3
    for low, high in (cell["iqr_pct"], cell["ci95_pct"]):
        assert low <= cell["delta_pct"] <= high
    assert 0 < cell["delta_pct"] < 8
    assert "slow3/work_us=1000" in capsys.readouterr().out
