"""The variables kernbench sets in its workers and sides are named in one module."""

from __future__ import annotations

import os
import re
from pathlib import Path

import kernbench
from kernbench.ab.interleaved import side_process_env
from kernbench.execute import gpus, worker_task
from kernbench.results.model import GpuId
from kernbench.worker_env import PARENT_PID_ENV, RUNNER_SET

PACKAGE = Path(kernbench.__file__).parent
OWNER = PACKAGE / "worker_env.py"


def test_no_module_but_the_owner_spells_a_runner_variable():
    literal = re.compile(r"[\"'](" + "|".join(sorted(RUNNER_SET)) + r")[\"']")
    spelled = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py")) if path != OWNER
        for n, line in enumerate(path.read_text().splitlines(), 1) if literal.search(line)
    ]
    assert spelled == []


def test_the_runner_sets_only_names_of_its_set(monkeypatch):
    for name in list(RUNNER_SET) + ["KERNBENCH_EXTRA"]:
        monkeypatch.delenv(name, raising=False)
    env = worker_task.worker_env("cpu", 2, "B")
    lane = gpus.Lane("gpu0", GpuId(index="0", uuid="GPU-0", name="H200"))
    env.update(lane.env())
    set_here = {k for k in env if k.startswith("KERNBENCH_")}
    assert set_here and set_here <= RUNNER_SET


def test_a_worker_and_an_ab_side_die_with_this_runner_and_write_unbuffered(monkeypatch):
    monkeypatch.setenv("KB_SWITCH", "shell")
    side = side_process_env({"KB_SWITCH": None})
    worker = worker_task.worker_env("cpu", 1, "")
    for env in (side, worker):
        assert (env[PARENT_PID_ENV], env["PYTHONUNBUFFERED"]) == (str(os.getpid()), "1")
    assert "KB_SWITCH" not in side and worker["KB_SWITCH"] == "shell"
