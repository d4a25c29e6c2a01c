from __future__ import annotations

import time

import pytest

from kernbench.kernels import resolve_factory
from kernbench.kernels.synthetic import make_sleep


def best_of(run, calls: int = 15) -> float:
    """The fastest of several calls: preemption only ever adds time."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def test_sleep_is_the_builtin_synthetic_kernel(tmp_path):
    assert resolve_factory("sleep", tmp_path) is make_sleep


def test_spins_for_work_us():
    assert best_of(make_sleep(work_us=2000)) == pytest.approx(2e-3, rel=0.05)


def test_the_switch_adds_the_effect_only_when_set_to_1(monkeypatch):
    monkeypatch.setenv("KB_TEST_SWITCH", "1")
    slow = best_of(make_sleep(work_us=2000, switch="KB_TEST_SWITCH", effect_pct=50, device="cpu"))
    monkeypatch.setenv("KB_TEST_SWITCH", "0")
    plain = best_of(make_sleep(work_us=2000, switch="KB_TEST_SWITCH", effect_pct=50))
    assert slow / plain == pytest.approx(1.5, rel=0.05)


def test_fails_only_in_its_round(monkeypatch):
    monkeypatch.setenv("KERNBENCH_ROUND", "2")
    with pytest.raises(RuntimeError, match="synthetic failure in round 2"):
        make_sleep(work_us=10, fail_round=2)
    monkeypatch.setenv("KERNBENCH_ROUND", "3")
    make_sleep(work_us=10, fail_round=2)()


def test_rejects_a_non_positive_duration():
    with pytest.raises(ValueError, match="work_us and scale must be positive"):
        make_sleep(work_us=0)
