"""Which order makes a process's 29 µs GEMM faster: the order the processes start their
CUDA context in, or the order they allocate the kernel's buffers in?

    python3 scripts/slot_probe.py --out probe.json [--device cuda] [--turns 60]

In an interleaved A/B the sides start, and prepare each cell, in one rotating order, and
the side started second ran a 29 µs batched GEMM 0.5-2% faster (ADR 0024). This probe
takes the two orders apart. Per trial, three worker processes import torch together; then
each creates its CUDA context in a fixed order (0, 1, 2) and allocates its buffers (the
bmm's operands and a flush buffer of twice the L2) in the trial's order, one of the six
permutations. The workers then take turns as kernbench's sides do (blocks ABC CBA BCA ACB
CAB BAC), each turn `--calls` calls timed alone with CUDA events behind an L2 flush. A
worker's time is the median of its turn medians, relative to the three's mean. Nothing
of kernbench runs here: only torch (and kernbench's hold clock, a constant).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from itertools import permutations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernbench.kernels.gpu_hold import HOLD_CLOCK_HZ  # noqa: E402 - a constant only

ROWS = ["012", "210", "120", "021", "201", "102"]  # one turn per worker a block


def worker(device: str) -> None:
    """Answer the parent's requests, one JSON line each: init, prepare, turn, exit."""
    import torch

    state: dict[str, Any] = {}
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "init":
            if device == "cuda":
                torch.cuda.init()
                torch.empty(1, device="cuda")
            reply: dict[str, Any] = {"ok": True}
        elif op == "prepare":
            shape = request["shape"]
            a = torch.randn(shape[0], shape[1], shape[3], device=device).to(torch.bfloat16)
            b = torch.randn(shape[0], shape[3], shape[2], device=device).to(torch.bfloat16)
            l2 = (torch.cuda.get_device_properties(0).L2_cache_size
                  if device == "cuda" else 1 << 20)
            state.update(a=a, b=b, flush=torch.empty(2 * l2 // 4, device=device))
            for _ in range(20):
                torch.bmm(a, b)
            reply = {"ok": True, "a": a.data_ptr() if device == "cuda" else 0}
        elif op == "turn":
            reply = {"ok": True, "median_s": _turn(torch, state, request["calls"], device)}
        else:
            return
        print(json.dumps(reply), flush=True)


def _turn(torch: Any, state: dict[str, Any], calls: int, device: str) -> float:
    a, b, flush = state["a"], state["b"], state["flush"]
    if device != "cuda":
        times = []
        for _ in range(calls):
            flush.sum()
            started = time.perf_counter()
            torch.bmm(a, b)
            times.append(time.perf_counter() - started)
        return statistics.median(times)
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(calls)]
    torch.cuda._sleep(int(1e-3 * HOLD_CLOCK_HZ))  # the host gets ahead, as kernbench's hold
    for start, end in pairs:
        flush.sum()
        start.record()
        torch.bmm(a, b)
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e-3 for s, e in pairs)


class Worker:
    def __init__(self, device: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--device", device],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited with {self.process.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": "exit"}) + "\n")
        self.process.stdin.close()
        self.process.wait(30)


def trial(device: str, prepare_order: tuple[int, ...], shape: list[int], turns: int,
          calls: int) -> dict[str, Any]:
    workers = [Worker(device) for _ in range(3)]
    try:
        for w in workers:  # contexts in a fixed order: 0, 1, 2
            w.ask({"op": "init"})
        pointers = {}
        for i in prepare_order:
            pointers[i] = workers[i].ask({"op": "prepare", "shape": shape})["a"]
        for w in workers:  # an untimed turn each, as kernbench's sides take
            w.ask({"op": "turn", "calls": calls})
        medians: dict[int, list[float]] = {0: [], 1: [], 2: []}
        for block in range(turns):
            for who in ROWS[block % len(ROWS)]:
                medians[int(who)].append(workers[int(who)].ask(
                    {"op": "turn", "calls": calls})["median_s"])
    finally:
        for w in workers:
            w.close()
    times = {i: statistics.median(m) for i, m in medians.items()}
    mean = statistics.fmean(times.values())
    return {
        "context_order": [0, 1, 2],
        "prepare_order": list(prepare_order),
        "median_s": times,
        "relative_pct": {i: 100 * (t / mean - 1) for i, t in times.items()},
        "operand_ptr": pointers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--turns", type=int, default=60, help="blocks of one turn each")
    parser.add_argument("--calls", type=int, default=47, help="calls a turn")
    parser.add_argument("--shape", default="100,384,384,384", help="batch,M,N,K")
    parser.add_argument("--repeat", type=int, default=1, help="passes over the six orders")
    args = parser.parse_args()
    if args.worker:
        worker(args.device)
        return
    shape = [int(x) for x in args.shape.split(",")]
    trials = []
    for _ in range(args.repeat):
        for order in permutations(range(3)):
            result = trial(args.device, order, shape, args.turns, args.calls)
            trials.append(result)
            rel = result["relative_pct"]
            print(f"prepare {''.join(map(str, order))}: "
                  + "  ".join(f"w{i} {rel[i]:+.2f}%" for i in range(3))
                  + f"  (fastest: context slot {min(rel, key=rel.get)}, prepare slot "
                  f"{list(order).index(min(rel, key=rel.get))})", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"shape": shape, "turns": args.turns,
                                        "calls": args.calls, "device": args.device,
                                        "trials": trials}, indent=1))


if __name__ == "__main__":
    main()
