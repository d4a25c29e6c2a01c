"""Benchmark of kernbench itself: what the framework costs beyond the timing budget.

    python scripts/bench_framework.py [--cells 20] [--repeat 3]

Prints, on this machine:
- worker start-up: a run of one no-op cell, minus its timing budget;
- overhead per cell: (wall time of an N-cell run - start-up - N x budget) / N;
- fast mode: `kernbench run --bench milestone-1h-gemm --fast` end to end, and whether
  it imported torch;
- `plan` and `validate` of a bench at the cell cap (MAX_CELLS cells: it lists the first
  thousand and counts the rest; before the cap was kept while building, a minute and more).
Numbers, not assertions: run it on the machine you care about.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BUDGET_S = 0.02
WARMUP_S = 0.0

BENCH = """\
name: framework-overhead
description: no-op cells for measuring the framework
kernel: noop:make
axes:
  i: {values}
timer: {{warmup_s: {warmup}, budget_s: {budget}, min_samples: 3, rel_ci: 0.000001}}
"""


def write_bench(folder: Path, cells: int) -> Path:
    (folder / "noop.py").write_text("def make(**params):\n    return lambda: None\n")
    path = folder / "overhead.yaml"
    path.write_text(BENCH.format(values=list(range(cells)), warmup=WARMUP_S, budget=BUDGET_S))
    return path


CAP_BENCH = """\
name: at-the-cap
description: MAX_CELLS cells, five axes of ten values
kernel: sleep
axes:
  a: &ten [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  b: *ten
  c: *ten
  d: *ten
  e: *ten
metrics:
  flops: a*b*c*d*e
"""


def timed_run(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def kernbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernbench", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        one = folder / "one"
        many = folder / "many"
        one.mkdir()
        many.mkdir()
        single = write_bench(one, 1)
        several = write_bench(many, args.cells)
        startup, per_run = [], []
        for k in range(args.repeat):
            wall_one = timed_run(kernbench("run", "--bench", str(single), "--device", "cpu",
                                           "--out", str(folder / f"o{k}"), "--no-figures"))
            wall_many = timed_run(kernbench("run", "--bench", str(several), "--device", "cpu",
                                            "--out", str(folder / f"m{k}"), "--no-figures"))
            startup.append(wall_one - BUDGET_S)
            per_run.append((wall_many - wall_one - (args.cells - 1) * BUDGET_S) / (args.cells - 1))
        cap = folder / "cap.yaml"
        cap.write_text(CAP_BENCH)
        plan_cap = [timed_run(kernbench("plan", "--bench", str(cap), "--device", "cpu"))
                    for _ in range(args.repeat)]
        validate_cap = [timed_run(kernbench("validate", str(cap))) for _ in range(args.repeat)]
        fast = [
            timed_run(kernbench("run", "--bench", "milestone-1h-gemm", "--fast",
                                "--out", str(folder / f"fast{k}")))
            for k in range(args.repeat)
        ]
        probe_out = str(folder / "probe")
        probe = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(f"""
                import sys
                from pathlib import Path
                from kernbench.commands.run import RunRequest, run
                run(RunRequest(bench="milestone-1h-gemm", fast=True, out=Path({probe_out!r})))
                print("torch" in sys.modules)
            """)],
            capture_output=True, text=True, check=True,
        ).stdout.split()[-1]
    print(f"{'measure':<44} {'median':>10} {'min':>10} {'max':>10}")
    rows = [
        ("run start-up + one cell, minus budget (s)", startup),
        (f"overhead per cell beyond budget (ms, {args.cells} cells)",
         [x * 1e3 for x in per_run]),
        ("fast mode, milestone-1h-gemm, end to end (s)", fast),
        ("plan of a bench at the cell cap (s)", plan_cap),
        ("validate of a bench at the cell cap (s)", validate_cap),
    ]
    for name, values in rows:
        print(f"{name:<44} {statistics.median(values):>10.3f} {min(values):>10.3f} "
              f"{max(values):>10.3f}")
    print(f"fast mode imported torch: {probe}")


if __name__ == "__main__":
    main()
