"""The true effect of each cell of a known-effect A/B bench, measured in one process.

    python scripts/ab_reference.py --bench benches/ab-known-effect.yaml --device cuda \\
        --pairs 200 --out ref.json

Per cell, both configurations live in this process at once: the bench's factory (imported
from the bench file's folder) is called with the switch set to A's value, then to B's.
After a warm-up of each, the two take short turns, A B B A ..., `--pairs` pairs. A turn is
`--calls-per-turn` calls (default: as many as make a cell last about CELL_TARGET_S), each
timed alone: on cuda with CUDA events, an L2 flush (a read of twice the L2) before it and
the whole turn queued behind a short GPU hold, as kernbench's event timer does; on the
cpu with perf_counter. A turn's time is the median of its calls, a pair's delta
log(B/A) of its two turns, and the cell's effect the median paired delta, in percent of
A's time (positive: B is slower), with the IQR of the paired deltas (their spread) and
the median's 95% order-statistic interval (its uncertainty). Pairs a few ms apart see the
same machine state, so the answer holds however the machine drifts over seconds.

Only switches that the factory reads work here (both sides share one process, its
libraries and their settings). Nothing of kernbench's timers runs: kernbench only reads
the bench file, expands its cells (so cells and ids are those `kernbench ab` reports) and
gives the median's interval.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from kernbench.analyze.stats import median_interval
from kernbench.kernels import gpu_hold, resolve_factory
from kernbench.kernels.base import Kernel, as_kernel
from kernbench.plan import Cell, plan, select
from kernbench.results.provenance import utc_now
from kernbench.spec.loader import load_bench
from kernbench.units import seconds_text

CELL_TARGET_S = 2.0  # timed calls per cell, both sides, when --calls-per-turn is left to us
MAX_CALLS_PER_TURN = 2000
WARMUP_S = 0.1  # untimed calls per side before the pairs
FLUSH_FACTOR = 2  # the flush buffer is this many times the L2


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True, type=Path, help="the bench's YAML file")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--calls-per-turn", type=int, default=0, help="0: about 2 s a cell")
    parser.add_argument("--only", action="append", default=[], help="KEY=V1[,V2], as kernbench")
    parser.add_argument("--switch", help="default: the bench's ab block")
    parser.add_argument("--a", dest="a_value", help="A's value; default: the bench's ab block")
    parser.add_argument("--b", dest="b_value", help="B's value; default: the bench's ab block")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    if args.pairs < 2:
        parser.error("--pairs must be at least 2")
    return args


@contextmanager
def switched(name: str, value: str) -> Iterator[None]:
    """The environment variable `name` set to `value` inside, restored after."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


class CpuClock:
    """perf_counter around each call."""

    def __init__(self) -> None:
        self.name = "perf_counter"

    def turn(self, kernel: Kernel, calls: int) -> list[float]:
        run, sync = kernel.run, kernel.synchronize or (lambda: None)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            run()
            sync()
            times.append(time.perf_counter() - start)
        return times


class CudaClock:
    """CUDA events around each call, a read flush of twice the L2 before it, the turn
    queued behind a GPU hold so the host's enqueue is never timed."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.name = "cuda events"
        self.gpu = props.name
        self.l2_bytes = int(props.L2_cache_size)
        flush_elements = max(FLUSH_FACTOR * self.l2_bytes, 8 << 20) // 4
        self.buffer = torch.ones(flush_elements, dtype=torch.float32, device="cuda")
        self.scratch = torch.empty((), dtype=torch.float32, device="cuda")
        self.events: list[tuple[Any, Any]] = []
        self.enqueue_per_call_s: float | None = None  # the host's, from the last turn

    def _events(self, n: int) -> list[tuple[Any, Any]]:
        """n (start, end) event pairs, reused from turn to turn."""
        make = self.torch.cuda.Event
        missing = n - len(self.events)
        for _ in range(missing):
            pair = (make(enable_timing=True), make(enable_timing=True))
            for event in pair:  # torch creates the event at its first record: not in a turn
                event.record()
            self.events.append(pair)
        if missing > 0:
            self.torch.cuda.synchronize()
        return self.events[:n]

    def turn(self, kernel: Kernel, calls: int) -> list[float]:
        torch = self.torch
        events = self._events(calls)
        per_call = self.enqueue_per_call_s
        # the hold covers HOLD_MARGIN times the host's enqueue of a turn
        hold_s = (gpu_hold.FIRST_HOLD_S if per_call is None
                  else gpu_hold.HOLD_MARGIN * per_call * calls)
        gpu_hold.hold(hold_s)
        enqueue_start = time.perf_counter()
        for start, end in events:
            torch.sum(self.buffer, dim=0, out=self.scratch)
            start.record()
            kernel.run()
            end.record()
        self.enqueue_per_call_s = (time.perf_counter() - enqueue_start) / calls
        events[-1][1].synchronize()
        return [start.elapsed_time(end) * 1e-3 for start, end in events]


def build(factory: Callable[..., Any], cell: Cell, switch: str, value: str) -> Kernel:
    with switched(switch, value):
        kernel = as_kernel(factory(**dict(cell.params)))
    if kernel.measure is not None or kernel.build is not None:
        raise SystemExit(f"{cell.id}: kernels that time or tune themselves are not supported")
    return kernel


def checked(kernel: Kernel, label: str) -> float | None:
    if kernel.check is None:
        return None
    result = kernel.check()
    if not result.ok:
        raise SystemExit(f"{label}: check failed, rel_err {result.rel_err:.3g}")
    return result.rel_err


def warm_up(clock: Any, kernel: Kernel) -> float:
    """Untimed turns for WARMUP_S of wall time; returns one call's wall time (flush and
    event records included), from the last of them."""
    deadline = time.perf_counter() + WARMUP_S
    calls, spent = 1, 0.0
    while True:
        start = time.perf_counter()
        clock.turn(kernel, calls)
        spent = (time.perf_counter() - start) / calls
        if time.perf_counter() >= deadline:
            return spent
        calls = min(calls * 2, MAX_CALLS_PER_TURN)


def percent(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio)


def measure_cell(
    clock: Any, factory: Callable[..., Any], cell: Cell, args: argparse.Namespace
) -> dict[str, Any]:
    kernels = {
        "A": build(factory, cell, args.switch, args.a_value),
        "B": build(factory, cell, args.switch, args.b_value),
    }
    errors = {side: checked(kernel, f"{cell.id} {side}") for side, kernel in kernels.items()}
    per_call = max(warm_up(clock, kernels[side]) for side in ("A", "B"))
    calls = args.calls_per_turn or _auto_calls(per_call, args.pairs)
    turns: dict[str, list[float]] = {"A": [], "B": []}
    started = time.perf_counter()
    for pair in range(args.pairs):
        for side in ("A", "B") if pair % 2 == 0 else ("B", "A"):
            turns[side].append(statistics.median(clock.turn(kernels[side], calls)))
    wall = time.perf_counter() - started
    for kernel in kernels.values():
        if kernel.close is not None:
            kernel.close()
    deltas = [math.log(b / a) for a, b in zip(turns["A"], turns["B"], strict=True)]
    q1, median, q3 = np.percentile(deltas, [25, 50, 75])
    interval = median_interval(deltas)
    a_low, a_high = np.percentile(turns["A"], [5, 95])
    return {
        "id": cell.id,
        "variant": cell.variant,
        "axes": dict(cell.axes),
        "params": dict(cell.params),
        "check_rel_err": errors,
        "info_b": kernels["B"].info,
        "calls_per_turn": calls,
        "pairs": args.pairs,
        "wall_s": wall,
        "a_median_s": statistics.median(turns["A"]),
        "b_median_s": statistics.median(turns["B"]),
        "delta_pct": percent(float(median)),
        "iqr_pct": [percent(float(q1)), percent(float(q3))],
        "ci95_pct": [percent(interval.low), percent(interval.high)],
        # how far A itself moved during the cell (5th to 95th percentile of its turns):
        # the drift the pairing took out
        "a_spread_pct": 100.0 * (a_high / a_low - 1),
        "pair_deltas_pct": [percent(d) for d in deltas],
        "a_turns_s": turns["A"],
        "b_turns_s": turns["B"],
    }


def _auto_calls(per_call_s: float, pairs: int) -> int:
    turn_s = CELL_TARGET_S / (2 * pairs)
    return max(1, min(round(turn_s / per_call_s), MAX_CALLS_PER_TURN))


def table(rows: list[dict[str, Any]], switch: str) -> str:
    width = max([len(row["id"]) for row in rows] + [4])
    header = (
        f"{'cell':<{width}} {'A median':>11} {'B median':>11} {'effect %':>9} "
        f"{'95% CI %':>17} {'IQR %':>17} {'A moved %':>9} {'calls':>6}"
    )
    lines = [f"true effect of {switch}: median paired delta of B vs A", header]
    for row in rows:
        lines.append(
            f"{row['id']:<{width}} {seconds_text(row['a_median_s'], 4):>11} "
            f"{seconds_text(row['b_median_s'], 4):>11} {row['delta_pct']:>+9.2f} "
            f"{_span(row['ci95_pct']):>17} {_span(row['iqr_pct']):>17} "
            f"{row['a_spread_pct']:>9.2f} {row['calls_per_turn']:>6}"
        )
    return "\n".join(lines)


def _span(bounds: list[float]) -> str:
    return f"[{bounds[0]:+.2f}, {bounds[1]:+.2f}]"


def fill_switch(args: argparse.Namespace, bench: Any) -> None:
    """Fill the switch and its values from the bench's ab block where not given."""
    ab = bench.ab
    if args.switch is None:
        if ab is None:
            raise SystemExit(f"{args.bench}: no ab block; give --switch")
        args.switch = ab.switch
    args.a_value = args.a_value if args.a_value is not None else (ab.a if ab else "0")
    args.b_value = args.b_value if args.b_value is not None else (ab.b if ab else "1")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    bench = load_bench(args.bench)
    fill_switch(args, bench)
    cells = plan(bench, args.device)
    if args.only:
        cells = select(cells, args.only)
    factory = resolve_factory(bench.kernel, args.bench.parent)
    clock: Any = CudaClock() if args.device == "cuda" else CpuClock()
    rows = []
    for cell in cells:
        rows.append(measure_cell(clock, factory, cell, args))
        row = rows[-1]
        print(f"  {row['id']}: {row['delta_pct']:+.2f}% ({row['wall_s']:.1f} s)", file=sys.stderr)
    print(table(rows, args.switch))
    if args.out is not None:
        document = {
            "bench": bench.name,
            "bench_path": str(args.bench),
            "device": args.device,
            "machine": _machine(clock),
            "switch": args.switch,
            "a": args.a_value,
            "b": args.b_value,
            "pairs": args.pairs,
            "settings": {
                "calls_per_turn": args.calls_per_turn or "auto",
                "cell_target_s": CELL_TARGET_S,
                "warmup_s": WARMUP_S,
                "flush_factor": FLUSH_FACTOR,
                "order": "ABBA: pair k is A then B when k is even, B then A when odd",
            },
            "created_utc": utc_now(),
            "cells": rows,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(document, indent=1, default=str) + "\n")
    return 0


def _machine(clock: Any) -> dict[str, Any]:
    machine: dict[str, Any] = {"clock": clock.name, "python": sys.version.split()[0]}
    if isinstance(clock, CudaClock):
        torch = clock.torch
        machine.update(
            gpu=clock.gpu,
            l2_bytes=clock.l2_bytes,
            torch=torch.__version__,
            cuda=torch.version.cuda,
        )
    return machine


if __name__ == "__main__":
    sys.exit(main())
