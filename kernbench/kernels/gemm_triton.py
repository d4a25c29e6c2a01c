"""GEMM through a Triton kernel under @triton.autotune, with pinned replay.

The first run of a cell calls `self_tune()`: the autotuner times every candidate once and
its winner and timings become the pin. Every later run calls `build(pin)`: the prune hook
in `gemm_triton_jit` narrows the candidates to exactly the pinned config, so nothing is
re-timed and a near-tie cannot flip the choice between runs.

triton and torch are imported when a kernel is made; `source_hash()` reads the kernel's
source text from the file, so pins can be fingerprinted without a GPU.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from kernbench.dtypes import TOLERANCE, TORCH_NAMES
from kernbench.kernels.base import CheckResult, CorrectnessError, Kernel, TuneReport
from kernbench.kernels.events import SECONDS_PER_MS

JIT_SOURCE = Path(__file__).with_name("gemm_triton_jit.py")
KERNEL_FUNCTION = "matmul_kernel"
CONFIG_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
DTYPES = ("bf16", "fp16")
# Used when a cell asks for no autotuning: a sound large-shape Hopper choice.
DEFAULT_CONFIG = {
    "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3,
}  # fmt: skip


@cache
def _jit_parts() -> tuple[str, list[dict[str, int]]]:
    """The @triton.jit function's source text and the config space, read without importing
    triton (the file is parsed, not executed)."""
    text = JIT_SOURCE.read_text()
    tree = ast.parse(text)
    source = None
    space = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == KERNEL_FUNCTION:
            source = ast.get_source_segment(text, node)
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "CONFIG_SPACE":
            space = ast.literal_eval(node.value)  # type: ignore[arg-type]
    if source is None or space is None:
        raise RuntimeError(f"{JIT_SOURCE}: {KERNEL_FUNCTION} or CONFIG_SPACE not found")
    return source, space


def config_space() -> list[dict[str, int]]:
    return [dict(config) for config in _jit_parts()[1]]


def source_hash() -> str:
    """sha256 (16 hex digits) of the kernel's source and its config space: a pin recorded
    against other code, or chosen among other candidates, is stale."""
    source, space = _jit_parts()
    payload = source + "\n" + json.dumps(space, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def normalize_config(config: Mapping[str, Any]) -> dict[str, int]:
    """A pin as the prune hook compares it: exactly CONFIG_KEYS, ints; it must be a candidate."""
    missing = [key for key in CONFIG_KEYS if key not in config]
    if missing:
        raise ValueError(f"triton gemm config lacks {', '.join(missing)}: {dict(config)}")
    pin = {key: int(config[key]) for key in CONFIG_KEYS}
    if pin not in config_space():
        raise ValueError(f"config {pin} is not among the triton gemm candidates")
    return pin


def config_dict(config: Any) -> dict[str, int]:
    """A triton.Config as the JSON-serializable dict pins store."""
    values = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
    return {key: int(values[key]) for key in CONFIG_KEYS}


def prune_to(configs: list[Any], pin: Mapping[str, int] | None) -> list[Any]:
    """The autotuner's candidates narrowed to the pinned one (all of them without a pin)."""
    if pin is None:
        return list(configs)
    chosen = [config for config in configs if config_dict(config) == dict(pin)]
    if not chosen:
        raise ValueError(f"pinned config {dict(pin)} is not among the triton gemm candidates")
    return chosen[:1]


def tile_of(config: Mapping[str, Any]) -> tuple[int, int, int]:
    return (int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"]))


def candidates_from_timings(timings: Mapping[Any, Any]) -> list[dict[str, Any]]:
    """The autotuner's {Config: [median, p20, p80] ms} as [{"config", "time_s"}]; a config that
    failed to compile (inf) has time_s None."""
    out = []
    for config, value in timings.items():
        ms = value[0] if isinstance(value, list | tuple) else value
        seconds = float(ms) * SECONDS_PER_MS if math.isfinite(float(ms)) else None
        out.append({"config": config_dict(config), "time_s": seconds})
    return out


def make(
    M: int,
    N: int,
    K: int,
    dtype: str = "bf16",
    device: str = "cuda",
    autotune: bool = True,
) -> Kernel:
    import torch

    if device != "cuda":
        raise ValueError(f"the triton gemm runs on cuda, not {device!r}")
    if dtype not in DTYPES:
        raise ValueError(f"the triton gemm supports {', '.join(DTYPES)}, not {dtype!r}")
    from kernbench.kernels import gemm_triton_jit as jit

    operands = _Operands(M, N, K, getattr(torch, TORCH_NAMES[dtype]))
    key = jit.tuning_key(M, N, K, operands.a.dtype)
    check = _checker(operands, dtype)
    info = _info(M, N, K, dtype)

    def pin(config: Mapping[str, Any]) -> dict[str, int]:
        chosen = normalize_config(config)
        jit.PINNED[key] = chosen
        # A winner this process tuned earlier sits in the autotuner's cache and would be
        # used before the prune hook is asked: drop it.
        jit.matmul.cache.clear()
        return chosen

    def build(config: Mapping[str, Any]) -> Kernel:
        """The kernel with `config` pinned, its output checked once right here: the caller
        checked the unpinned kernel, which runs the default config (see check_untuned)."""
        chosen = pin(config)
        result = check()
        if not result.ok:
            raise CorrectnessError(
                f"triton gemm config {chosen}: relative error {result.rel_err:.3g} exceeds "
                f"{result.tolerance:.3g}"
            )
        return Kernel(
            run=operands.launch,
            check=check,
            tile=tile_of(chosen),
            synchronize=torch.cuda.synchronize,
            info={**info, "config": chosen, "pinned": True, "check_rel_err": result.rel_err},
        )

    def check_untuned() -> CheckResult:
        """Checking before tuning must not tune (a replay would time every candidate):
        run the default config, pinned for this one call."""
        pin(DEFAULT_CONFIG)
        try:
            return check()
        finally:
            jit.PINNED.pop(key, None)
            jit.matmul.cache.clear()

    if not autotune:
        return build(DEFAULT_CONFIG)

    kernel = Kernel(
        run=operands.launch,
        check=check_untuned,
        configs=config_space(),
        build=build,
        synchronize=torch.cuda.synchronize,
        info=info,
    )

    def self_tune() -> TuneReport:
        jit.PINNED.pop(key, None)
        jit.matmul.cache.clear()
        before = jit.BENCH_CALLS[0]
        operands.launch()
        torch.cuda.synchronize()
        winner = config_dict(jit.matmul.best_config)
        timings = getattr(jit.matmul, "configs_timings", None) or {}
        kernel.tile = tile_of(winner)
        kernel.info.update(config=winner, tuning_bench_calls=jit.BENCH_CALLS[0] - before)
        return TuneReport(winner=winner, candidates=candidates_from_timings(timings))

    kernel.self_tune = self_tune
    return kernel


class _Operands:
    def __init__(self, M: int, N: int, K: int, dtype: Any) -> None:
        import torch

        self.torch = torch
        self.generator = torch.Generator(device="cuda")
        self.a = torch.empty((M, K), dtype=dtype, device="cuda")
        self.b = torch.empty((K, N), dtype=dtype, device="cuda")
        self.c = torch.empty((M, N), dtype=dtype, device="cuda")
        self.redraw()

    def redraw(self) -> None:
        torch = self.torch
        self.generator.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        self.a.copy_(torch.randn(self.a.shape, generator=self.generator, device="cuda"))
        self.b.copy_(torch.randn(self.b.shape, generator=self.generator, device="cuda"))

    def launch(self) -> None:
        from kernbench.kernels import gemm_triton_jit as jit

        jit.launch(self.a, self.b, self.c)


def _checker(operands: _Operands, dtype: str) -> Any:
    def check() -> CheckResult:
        torch = operands.torch
        operands.redraw()
        operands.c.fill_(float("nan"))  # poison: an unwritten element fails the check
        operands.launch()
        torch.cuda.synchronize()
        reference = operands.a.double() @ operands.b.double()
        error = torch.linalg.norm(operands.c.double() - reference) / torch.linalg.norm(reference)
        return CheckResult(rel_err=float(error), tolerance=TOLERANCE[dtype])

    return check


def _info(M: int, N: int, K: int, dtype: str) -> dict[str, Any]:
    import torch
    import triton

    return {
        "implementation": "triton matmul (fp32 accumulate) under triton.autotune",
        "source_hash": source_hash(),
        "tuning_key": {"M": M, "N": N, "K": K, "dtype": dtype},
        "triton": triton.__version__,
        "torch": torch.__version__,
        "device_name": torch.cuda.get_device_name(),
        "candidates": len(config_space()),
    }
