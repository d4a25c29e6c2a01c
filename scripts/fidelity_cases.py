"""The fidelity page's cases: their names, what each is, the tools each is timed by, the
order of those tools in a repetition, and the kernel a name stands for. Pure but for
`make_case` (torch, imported there)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

EMPTY_CASE = "empty-0"
GEMM_SIZES = (1024, 2048, 4096, 8192)
EXTRA_GEMMS = ("gemm-bf16-4096x4096x1024", "gemm-fp16-4096")
ADD_ELEMENTS = 65536
# loop_write and event_write_unsettled bisect event_write against do_bench: do_bench's own
# loop with kernbench's flush and events, and kernbench's timer without its settle phase.
# do_bench_settled and do_bench_long ask whether the rest is the card's power history:
# do_bench behind the same back-to-back flush-and-run phase as kernbench's settle, and
# do_bench sampling over kernbench's whole window (settle and budget) instead of 100 ms.
# Since the tenth session every tool starts from the same state (`Tools.precondition`),
# which the bisecting tools above were groping for; they stay callable (--also), as do
# event_write_deep (the host as far ahead as do_bench's), event_write_burst (behind
# do_bench's warm-up) and loop_write_synced_warmup (behind kernbench's), which ask what
# still keeps event_write under do_bench on a power-capped card at the same clock.
GEMM_TOOLS = ("event_read", "event_write", "isolated_read", "isolated_cupti", "graph_read",
              "do_bench", "loop_write")
ADD_TOOLS = GEMM_TOOLS + ("graph_warm", "do_bench_cudagraph")


def cases(sizes: Sequence[int], extra: Iterable[str] = EXTRA_GEMMS) -> list[str]:
    return [f"gemm-bf16-{n}" for n in sizes] + list(extra) + [f"add-{ADD_ELEMENTS}", EMPTY_CASE]


def parse_case(name: str) -> dict[str, Any]:
    """'gemm-bf16-4096' (M=N=K), 'gemm-bf16-4096x4096x1024' (MxNxK), 'add-65536' or
    'empty-0' (a kernel that returns at once: what events and launches add around any)."""
    kind, *rest = name.split("-")
    if name == EMPTY_CASE:
        return {"kind": "empty"}
    if kind == "add":
        return {"kind": "add", "elements": int(rest[0])}
    if kind != "gemm" or len(rest) != 2:
        raise ValueError(f"unknown case {name!r}")
    dims = [int(d) for d in rest[1].split("x")]
    m, n, k = dims * 3 if len(dims) == 1 else dims
    return {"kind": "gemm", "dtype": rest[0], "M": m, "N": n, "K": k}


def tools_for(name: str) -> tuple[str, ...]:
    return ADD_TOOLS if parse_case(name)["kind"] == "add" else GEMM_TOOLS


def order(rep: int, tools: Sequence[str]) -> list[str]:
    """Tools in order on even repetitions, reversed on odd ones."""
    return list(tools) if rep % 2 == 0 else list(reversed(tools))


def make_case(name: str) -> Any:
    import torch

    from kernbench.kernels import gemm_cuda
    from kernbench.kernels.base import Kernel

    case = parse_case(name)
    if case["kind"] == "gemm":
        return gemm_cuda.make(M=case["M"], N=case["N"], K=case["K"], dtype=case["dtype"])
    if case["kind"] == "empty":
        return Kernel(run=lambda: torch.cuda._sleep(0), synchronize=torch.cuda.synchronize)
    x = torch.randn(case["elements"], device="cuda")
    y = torch.randn(case["elements"], device="cuda")
    z = torch.empty_like(x)
    return Kernel(run=lambda: torch.add(x, y, out=z), synchronize=torch.cuda.synchronize)


# -- in-process measurement --------------------------------------------------------------------
