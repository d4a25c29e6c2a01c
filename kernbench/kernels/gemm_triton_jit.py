"""The Triton matmul kernel and its autotuner, with a prune hook that replays a pin.

Imported only by `gemm_triton` when a cell asks for the triton backend: it imports
triton at module level, because @triton.jit reads the kernel's module globals. No
`from __future__ import annotations` here: it would turn `tl.constexpr` into a string.
"""

from typing import Any

import triton
import triton.language as tl

from kernbench.kernels.gemm_triton import prune_to

# Hopper-minded candidates: 128x256 / 256x128 tiles for large shapes, smaller ones for the
# rest. A 128x256x64 bf16 stage takes 48 KiB of shared memory; four stages fit in 228.
CONFIG_SPACE: list[dict[str, int]] = [
    {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
    {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 64, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 5},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 5},
    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4, "num_warps": 2, "num_stages": 5},
]

# Pinned config per tuning key (M, N, K, dtype name): the prune hook narrows the candidates
# to it, and the autotuner skips benchmarking when one candidate is left.
PINNED: dict[tuple[int, int, int, str], dict[str, int]] = {}
BENCH_CALLS = [0]  # autotuner timings taken in this process; a replay must not add any
# Set by the prune hook when it narrowed to a pin. Triton before #10413 (3.6 included) still
# times a lone surviving config; the bench hook then answers without running anything.
_REPLAYING = [False]


def tuning_key(M: int, N: int, K: int, dtype: Any) -> tuple[int, int, int, str]:
    return (int(M), int(N), int(K), str(dtype))


def as_config(values: dict[str, int]) -> triton.Config:
    meta = {key: values[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    return triton.Config(meta, num_warps=values["num_warps"], num_stages=values["num_stages"])


def prune_to_pin(configs: list[Any], named_args: dict[str, Any], **_: Any) -> list[Any]:
    a = named_args["a_ptr"]
    pin = PINNED.get(tuning_key(named_args["M"], named_args["N"], named_args["K"], a.dtype))
    _REPLAYING[0] = pin is not None
    return prune_to(configs, pin)


def counting_bench(kernel_call: Any, quantiles: Any = None, **kwargs: Any) -> Any:
    if _REPLAYING[0]:
        return [0.0, 0.0, 0.0] if quantiles else 0.0
    BENCH_CALLS[0] += 1
    return triton.testing.do_bench(kernel_call, quantiles=quantiles, **kwargs)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    # Grouped launch order: GROUP_M row blocks share each column block of B while it is in L2.
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * blocks_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M  # wrap: loads stay in bounds
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - step * BLOCK_K
        a = tl.load(a_tile, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    out_rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_tile = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    inside = (out_rows[:, None] < M) & (out_cols[None, :] < N)
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=inside)


matmul = triton.autotune(
    configs=[as_config(values) for values in CONFIG_SPACE],
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": prune_to_pin},
    do_bench=counting_bench,
)(matmul_kernel)


def launch(a: Any, b: Any, c: Any) -> None:
    M, K = a.shape
    N = b.shape[1]

    def grid(meta: dict[str, int]) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    # Every argument positional: the prune hook sees only positional ones (named_args).
    matmul[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
    )  # fmt: skip
