"""scripts/bench_variant.py: the bench copies the GPU scripts run beside a bench."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from script_modules import SCRIPTS, load_script

from kernbench.spec.loader import load_bench

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = SCRIPTS / "bench_variant.py"
bench_variant = load_script("bench_variant")


def test_a_mapping_updates_the_benchs_own_and_anything_else_replaces_it() -> None:
    doc = {"name": "a", "timer": {"l2": "cold", "budget_s": 0.2}, "requires": {"world_size": 2},
           "data": "data/a.json"}
    found = bench_variant.variant(
        doc, ["name: b", "timer: {l2: warm, duty: isolated}", "requires: 1"], ["data"])
    assert found == {"name": "b", "timer": {"l2": "warm", "budget_s": 0.2, "duty": "isolated"},
                     "requires": 1}


def test_the_one_gpu_collective_bench_validates_and_says_its_timer(tmp_path: Path) -> None:
    out = tmp_path / "milestone-1h-ccl-1gpu.yaml"
    printed = subprocess.run(
        [sys.executable, str(SCRIPT), str(ROOT / "benches" / "milestone-1h-ccl.yaml"), str(out),
         "name: milestone-1h-ccl-1gpu", "requires: {world_size: 1}", "axes: {world_size: [1]}",
         "timer: {l2: warm}", "--drop", "data"],
        check=True, capture_output=True, text=True,
    ).stdout
    bench = load_bench(out)
    assert bench.name == "milestone-1h-ccl-1gpu"
    assert bench.requires.world_size == 1
    assert bench.timer.l2 == "warm" and bench.timer.budget_s == 0.2  # the rest kept
    assert "data" not in yaml.safe_load(out.read_text())
    assert printed.startswith("timer: {") and "l2: warm" in printed
