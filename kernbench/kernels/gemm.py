"""The built-in `gemm` kernel: one factory, three backends.

`backend: numpy` runs on the CPU through numpy's BLAS and needs nothing beyond the core;
`backend: torch` (cuBLAS) and `backend: triton` run on CUDA and are imported only when
a cell asks for them, so the CPU path never imports torch.

Switches read below this code, by the CUDA libraries, that an A/B may flip:
NVIDIA_TF32_OVERRIDE=0 makes cuBLAS ignore torch's permission to use tf32, and
TORCH_BLAS_PREFER_CUBLASLT=1 routes torch.matmul through cuBLASLt.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from threadpoolctl import threadpool_limits

from kernbench.dtypes import TOLERANCE
from kernbench.kernels import gemm_cuda, gemm_triton
from kernbench.kernels.base import CheckResult, Kernel, Positive

NUMPY_DTYPES = {"fp32": np.float32, "fp64": np.float64}
Backend = Literal["numpy", "torch", "triton"]
Staging = Literal["resident", "staged"]
Host = Literal["pinned", "pageable"]
# The options each backend reads. One it does not read fails the cell rather than being
# ignored, so a variant never claims a setting its numbers were not measured with.
READS: dict[str, tuple[str, ...]] = {
    "numpy": ("staging", "autotune"),
    "torch": ("staging", "host"),
    "triton": ("autotune",),
}


def options_problem(options: Mapping[str, Any]) -> str | None:
    """An option the backend does not read, or None. `validate` calls this with each
    variant's options (one without a backend says nothing), `make` with each cell's."""
    backend = options.get("backend")
    if backend not in READS:
        return None  # none named here, or unknown: the annotation check says which
    read_by_some = {name for names in READS.values() for name in names}
    unread = [name for name, value in options.items()
              if name in read_by_some and value is not None and name not in READS[backend]]
    if not unread:
        return None
    reads = ", ".join(READS[backend])
    return f"backend {backend} does not read {', '.join(unread)} (it reads {reads})"


def cell_problem(params: Mapping[str, Any]) -> str | None:
    """What a cell's parameters together rule out: numpy multiplies fp32 and fp64 only.
    `validate` calls this with each cell's parameters (`analyze/checks.py`), `make_numpy`
    with its own."""
    backend = params.get("backend") or "numpy"
    dtype = params.get("dtype") or "fp32"
    if backend == "numpy" and dtype not in NUMPY_DTYPES:
        return f"backend numpy multiplies {' and '.join(NUMPY_DTYPES)} only, not {dtype!r}"
    return None


def make(
    M: Positive,
    N: Positive,
    K: Positive,
    dtype: str = "fp32",
    backend: Backend = "numpy",
    device: str = "cpu",
    staging: Staging | None = None,
    host: Host | None = None,
    autotune: bool | None = None,
) -> Kernel:
    """The cell's GEMM. The annotations are what `validate` checks a bench's values
    against; an option left out takes the backend's own default."""
    if backend not in READS:
        raise ValueError(f"unknown gemm backend {backend!r}; known: {', '.join(READS)}")
    options = {"staging": staging, "host": host, "autotune": autotune}
    given: dict[str, Any] = {name: value for name, value in options.items() if value is not None}
    problem = options_problem({"backend": backend, **given})
    if problem:
        raise ValueError(problem)
    if backend == "torch":
        return gemm_cuda.make(M=M, N=N, K=K, dtype=dtype, device=device, **given)
    if backend == "triton":
        return gemm_triton.make(M=M, N=N, K=K, dtype=dtype, device=device, **given)
    if device != "cpu":
        raise ValueError(f"backend numpy runs on the CPU, not {device!r}")
    return make_numpy(M, N, K, dtype, **given)


def make_numpy(
    M: int,
    N: int,
    K: int,
    dtype: str,
    staging: str = "resident",
    autotune: bool = False,
) -> Kernel:
    problem = cell_problem({"backend": "numpy", "dtype": dtype})
    if problem:
        raise ValueError(problem)
    operands = _Operands(M, N, K, NUMPY_DTYPES[dtype])
    check = _checker(operands, dtype)
    if staging == "staged":
        return _staged(operands, check)
    if staging != "resident":
        raise ValueError(f"unknown staging {staging!r}; known: resident, staged")
    if not autotune:
        return Kernel(run=operands.matmul, check=check, info={"implementation": "numpy.matmul"})
    configs = _config_space(M, N)
    return Kernel(
        run=operands.matmul,
        check=check,
        configs=configs,
        build=lambda config: _blocked(operands, config, check),
        info={"implementation": "numpy blocked matmul"},
    )


class _Operands:
    """Fresh random operands (never zeros: they can run faster than real data)."""

    def __init__(self, M: int, N: int, K: int, dtype: type) -> None:
        rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
        self.a: np.ndarray = rng.standard_normal((M, K)).astype(dtype)
        self.b: np.ndarray = rng.standard_normal((K, N)).astype(dtype)
        self.c: np.ndarray = np.empty((M, N), dtype=dtype)

    def matmul(self) -> None:
        np.matmul(self.a, self.b, out=self.c)


def _checker(operands: _Operands, dtype: str) -> Any:
    def check() -> CheckResult:
        operands.c.fill(np.nan)  # poison: an unwritten element fails the check
        operands.matmul()
        reference = operands.a.astype(np.float64) @ operands.b.astype(np.float64)
        error = np.linalg.norm(operands.c - reference) / np.linalg.norm(reference)
        return CheckResult(rel_err=float(error), tolerance=TOLERANCE[dtype])

    return check


def _config_space(M: int, N: int) -> list[dict[str, int]]:
    """Thread count x block size: both change how the BLAS call tiles the work."""
    threads = sorted({1, os.cpu_count() or 1})
    blocks = [0] + [b for b in (256, 512) if b < max(M, N)]
    return [{"threads": t, "block": b} for t in threads for b in blocks]


def _blocked(operands: _Operands, config: Mapping[str, Any], check: Any) -> Kernel:
    block = int(config["block"])
    limiter = threadpool_limits(limits=int(config["threads"]), user_api="blas")
    a, b, c = operands.a, operands.b, operands.c
    M, N = c.shape

    def run() -> None:
        if block == 0:
            np.matmul(a, b, out=c)
            return
        for i in range(0, M, block):
            for j in range(0, N, block):
                rows, cols = slice(i, i + block), slice(j, j + block)
                np.matmul(a[rows], b[:, cols], out=c[rows, cols])

    tile = (block, block, a.shape[1]) if block else None
    return Kernel(
        run=run,
        check=check,
        tile=tile,
        close=limiter.restore_original_limits,
        info={"implementation": "numpy blocked matmul", "config": dict(config)},
    )


def _staged(operands: _Operands, check: Any) -> Kernel:
    """Copy in, multiply, copy out: the CPU analogue of host-device staging."""
    host_a, host_b = operands.a.copy(), operands.b.copy()
    host_c = np.empty_like(operands.c)
    last: dict[str, float] = {}

    def run() -> None:
        t0 = time.perf_counter()
        np.copyto(operands.a, host_a)
        np.copyto(operands.b, host_b)
        t1 = time.perf_counter()
        operands.matmul()
        t2 = time.perf_counter()
        np.copyto(host_c, operands.c)
        t3 = time.perf_counter()
        last.update(copy_in=t1 - t0, gemm=t2 - t1, copy_out=t3 - t2)

    return Kernel(
        run=run,
        check=check,
        stages=("copy_in", "gemm", "copy_out"),
        stage_times=lambda: dict(last),
        info={"implementation": "numpy.matmul with copies in and out"},
    )
