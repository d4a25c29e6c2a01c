"""A built wheel, installed into a fresh virtual environment outside the repository, runs a
roofline bench of its own in a plain folder: the profiles and schemas ship in the package;
so do the repository's benches, whose milestone redraws its committed data in fast mode.

No network: the wheel is built without build isolation, installed with --no-index
--no-deps, and the new environment borrows this one's installed dependencies through a
.pth file (which adds the folders to sys.path without running their .pth files, so this
checkout's editable install does not leak in).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent

BENCH = """\
# yaml-language-server: $schema=bench.schema.json
name: my-matmul
description: a numpy matmul of my own against the roofline
kernel: mm:make
axes:
  shape: [{M: 64, N: 64, K: 64}, {M: 128, N: 96, K: 64}]
dtypes: [fp32]
metrics:
  flops: 2*M*N*K
  bytes: (M*K + K*N + M*N) * itemsize
timer: {warmup_s: 0.0, budget_s: 0.05, min_samples: 5}
rounds: 1
model: roofline
figures: [throughput, utilization]
"""

KERNEL = '''
import numpy as np
from kernbench.kernels.base import CheckResult, Kernel


def make(M, N, K, dtype, device, **_):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)

    def check():
        ref = a.astype(np.float64) @ b.astype(np.float64)
        err = np.linalg.norm(a @ b - ref) / np.linalg.norm(ref)
        return CheckResult(rel_err=float(err), tolerance=1e-5)

    return Kernel(run=lambda: a @ b, check=check)
'''


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{argv}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def copy_sources(to: Path) -> Path:
    """What the wheel is built from, copied so the build leaves the checkout untouched."""
    to.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, to / name)
    for folder in ("kernbench", "benches"):  # benches/: mapped into the package (pyproject)
        shutil.copytree(REPO / folder, to / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return to


def fresh_venv(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    borrowed = [*site.getsitepackages(), site.getusersitepackages()]
    Path(purelib, "borrowed-deps.pth").write_text("\n".join(borrowed) + "\n")
    return python


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None,
                    reason="building the wheel offline needs setuptools installed")
def test_a_wheel_installed_elsewhere_runs_a_roofline_bench(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KERNBENCH_", "PYTHON")) and k != "MILESTONE_FAST"}
    source = copy_sources(tmp_path / "src")
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
         "--no-build-isolation", "-q", "-w", str(dist)], tmp_path, env)
    (wheel,) = dist.glob("kernbench-*.whl")

    python = fresh_venv(tmp_path / "venv")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
         "--no-deps", "-q", str(wheel)], tmp_path, env)
    kernbench = str(python.parent / "kernbench")

    work = tmp_path / "mine"
    work.mkdir()
    (work / "mm.py").write_text(textwrap.dedent(KERNEL))
    (work / "mm.yaml").write_text(BENCH)
    located = run([str(python), "-c", "import kernbench; print(kernbench.__file__)"], work, env)
    assert located.stdout.startswith(str(tmp_path / "venv"))

    schema = run([kernbench, "schema", "--print", "bench"], work, env).stdout
    (work / "bench.schema.json").write_text(schema)
    assert "ok mm.yaml" in run([kernbench, "validate", "mm.yaml"], work, env).stdout
    assert run([kernbench, "schema", "--check"], work, env).stdout == "schemas up to date\n"

    run([kernbench, "run", "--bench", "mm.yaml", "--device", "cpu", "--out", "out"], work, env)
    results = json.loads((work / "out" / "results.json").read_text())
    assert [cell["status"] for cell in results["cells"]] == ["ok", "ok"]
    assert results["hardware"]["name"] == "cpu-generic"
    assert all(cell["metrics"]["model_time_s"] > 0 for cell in results["cells"])
    assert results["provenance"]["kernbench"] == "0.1.0"
    assert results["provenance"]["git"] == {}  # an installed wheel has no commit
    figures = sorted(p.name for p in (work / "out" / "figures").glob("*.png"))
    assert figures == ["throughput.png", "utilization.png"]
    assert not (work / "pins").exists()

    listed = run([kernbench, "list"], work, env).stdout.splitlines()
    assert "milestone-1h-gemm" in [line.split()[0] for line in listed]
    fast = run([kernbench, "run", "--bench", "milestone-1h-gemm", "--fast", "--out", "fast"],
               work, env)
    assert "milestone-1h-gemm: fast mode" in fast.stdout
    assert (work / "fast" / "figures" / "throughput.png").is_file()
