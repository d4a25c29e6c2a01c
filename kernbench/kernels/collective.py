"""The `collective` built-in kernel: one torch.distributed collective per cell.

Parameters (every cell's axes): `op` (allreduce, allgather, reduce_scatter), `bytes`,
`world_size`, `inplace`, `dtype`, and `device` (gloo on cpu, nccl on cuda); optionally
`api` (`nccl`: NCCL called directly on the timing stream, CUDA only,
`kernels/nccl_direct.py`, the default on cuda; `torch`: torch.distributed, the default on
cpu), also set by KERNBENCH_COLLECTIVE_API so an A/B can switch it. On CUDA the direct
call is the default because it times NCCL itself, as nccl-tests in a process per GPU does
(2 H200s: the 1 KiB all-reduce 6.1 µs against its 5.9-6.7), where torch.distributed's
calls add their own cost (ADR 0042 addendum). Sizes follow
nccl-tests: `bytes` is one rank's allreduce buffer, the whole output of an allgather and
the whole input of a reduce-scatter (every rank's data counted).

The kernel hands the ranks timer (`kernbench.timing.ranks`) its rank primitives
(`Kernel.ranks`): every rank must run the same number of operations, and a collective is
only as fast as its slowest rank, so the timer decides from times reduced with MAX across
the ranks.

Inputs hold small integers, so the check compares bit for bit (`collective_check`).
Timed iterations reuse the buffers, so in-place sums grow (to inf eventually), as in
nccl-tests: the data's values do not change a collective's speed. Under `l2: cold` (the
default) timed calls rotate through copies of the buffers spanning twice the GPU's L2
(`collective_buffers`), as nccl-tests' do; the check uses the first copy. On CUDA the
sustained samples replay captured graphs of the calls, as nccl-tests' `-G` does
(`collective_graphs`, ADR 0046).
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal, get_args

from kernbench.dtypes import ITEMSIZE, TOLERANCE, TORCH_NAMES
from kernbench.errors import seconds_from_env
from kernbench.kernels.base import CheckResult, Kernel
from kernbench.kernels.collective_buffers import Buffers, rotation_slots
from kernbench.kernels.collective_check import EXACT_INTEGER, Expected, exact, relative_error
from kernbench.kernels.collective_cuda import CudaBatches
from kernbench.kernels.collective_graphs import (
    capture_mode,
    captures_graphs,
    graph_ring,
    nccl_settings,
    prepare_nccl,
)
from kernbench.kernels.nccl_direct import UNIQUE_ID_BYTES, bind, loaded, shared_communicator
from kernbench.units import counted, labelled

Op = Literal["allreduce", "allgather", "reduce_scatter"]
OPS: tuple[str, ...] = get_args(Op)
BACKENDS = {"cpu": "gloo", "cuda": "nccl"}
# The dtypes a collective takes: those whose exact integer range the check knows.
TORCH_DTYPES = {name: TORCH_NAMES[name] for name in EXACT_INTEGER}
TIMEOUT_ENV = "KERNBENCH_COLLECTIVE_TIMEOUT_S"
API_ENV = "KERNBENCH_COLLECTIVE_API"
Api = Literal["torch", "nccl"]
APIS: tuple[str, ...] = get_args(Api)
DEFAULT_API = {"cpu": "torch", "cuda": "nccl"}
DEFAULT_TIMEOUT_S = 300.0


def make(
    *,
    op: Op,
    bytes: int,
    world_size: int = 1,
    inplace: bool = True,
    dtype: str = "fp32",
    device: str = "cpu",
    api: Api | None = None,
) -> Kernel:
    """One cell's collective, on the process group this process joins on first call."""
    _validate(op, bytes, world_size, inplace, dtype, device)
    chosen_api = resolve_api(api, device)
    capture_mode(chosen_api)  # a bad CAPTURE_ENV fails the cell here, with its reason
    if device == "cuda":
        prepare_nccl()
    ensure_process_group(device, world_size)
    collective = Collective(op, bytes, inplace, dtype, device, chosen_api)
    return Kernel(
        run=collective.run,
        check=collective.check,
        ranks=collective,
        synchronize=collective.synchronize,
        close=collective.close,
        info=collective.info(),
    )


def _validate(op: str, size: int, world_size: int, inplace: bool, dtype: str, device: str) -> None:
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    if device not in BACKENDS:
        raise ValueError(f"unknown device {device!r}; known: {', '.join(BACKENDS)}")
    if dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; supported: {', '.join(TORCH_DTYPES)}")
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, not {world_size}")
    if op == "allreduce" and not inplace:
        raise ValueError(
            "allreduce has no out-of-place form in torch.distributed (all_reduce writes its "
            "input; a copy first would be timed too); use inplace: true"
        )
    unit = ITEMSIZE[dtype] * (1 if op == "allreduce" else world_size)
    if size <= 0 or size % unit:
        what = "the item size" if op == "allreduce" else "world_size × item size"
        raise ValueError(f"bytes={size} is not a positive multiple of {what} ({unit}) for {op}")


def resolve_api(api: str | None, device: str) -> str:
    """The cell's `api`, else KERNBENCH_COLLECTIVE_API, else the device's default; checked."""
    chosen = api or os.environ.get(API_ENV) or DEFAULT_API[device]
    _validate_api(chosen, device)
    return chosen


def _validate_api(api: str, device: str) -> None:
    if api not in APIS:
        raise ValueError(f"unknown api {api!r}; known: {', '.join(APIS)}")
    if api == "nccl" and device != "cuda":
        raise ValueError("api: nccl calls NCCL on a CUDA stream: it needs device cuda")


def ensure_process_group(device: str, world_size: int) -> str:
    """Join the process group once per process; return its backend.

    Under a launcher the rendezvous comes from the environment (RANK, WORLD_SIZE,
    MASTER_ADDR, ...); a lone process with world_size 1 gets an in-memory store. The
    timeout bounds a collective waiting on a rank that never comes.
    """
    import torch  # lazy: torch is optional
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = BACKENDS[device]
        timeout = timedelta(seconds=seconds_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
        options: dict[str, Any] = {"backend": backend, "timeout": timeout}
        if device == "cuda":
            local_rank = int(os.environ.get("LOCAL_RANK", "0"))
            torch.cuda.set_device(local_rank)
            options["device_id"] = torch.device("cuda", local_rank)
        if "RANK" not in os.environ:
            if world_size != 1:
                raise RuntimeError(
                    f"world_size={world_size} needs {world_size} ranks; start them through "
                    "kernbench.execute.launch (the runner does)"
                )
            options.update(store=dist.HashStore(), rank=0, world_size=1)
        dist.init_process_group(**options)
        atexit.register(_destroy_process_group)
    running = dist.get_world_size()
    if running != world_size:
        raise ValueError(f"the cell wants world_size={world_size} but the process group has "
                         f"{counted(running, 'rank')}")
    return str(dist.get_backend())


def _destroy_process_group() -> None:
    import torch.distributed as dist  # lazy: torch is optional

    if dist.is_initialized():
        dist.destroy_process_group()


class Collective:
    """Buffers and calls of one collective on this rank, and the rank primitives its timer
    needs (`kernbench.kernels.base.RankGroup`)."""

    def __init__(
        self, op: str, size: int, inplace: bool, dtype: str, device: str, api: str = "torch",
        slots: int | None = None,
    ) -> None:
        import torch  # lazy: torch is optional
        import torch.distributed as dist

        self.op, self.size, self.inplace, self.dtype, self.device = op, size, inplace, dtype, device
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.backend = str(dist.get_backend())
        self.torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
        self.elements = size // ITEMSIZE[dtype]  # of the whole message (nccl-tests' S)
        self.chunk = self.elements // self.world_size
        self._cuda: CudaBatches | None = None
        self._rotated = 1  # the slots the last timed batch rotated through
        self.api = api
        error: BaseException | None = None
        try:
            self.buffers = self._allocate(slots)
            if api == "nccl":
                loaded()
        except Exception as exc:  # noqa: BLE001 - every rank must learn of it, see below
            error = exc
        # An allocation (or a library) that fails on one rank only would leave the others
        # waiting in the next collective; all ranks agree first and fail together.
        self._agree_no_error(error)
        # Through NCCL directly, binding is a collective (the id's exchange).
        self._call = self._bind(lambda: 0)
        self._rotating = self._bind(self.buffers.next_slot)

    @property
    def input(self) -> Any:
        """The checked slot's input (slot 0)."""
        return self.buffers.input

    @property
    def output(self) -> Any:
        return self.buffers.output

    def _allocate(self, slots: int | None) -> Buffers:
        """The buffers; `slots` copies (default: on CUDA, enough to span twice the L2)."""
        import torch  # lazy: torch is optional

        if slots is None:
            slots = 1
            if self.device == "cuda":
                l2 = int(torch.cuda.get_device_properties(torch.cuda.current_device())
                         .L2_cache_size)
                slots = rotation_slots(self.size, l2)

        def empty(count: int) -> Any:
            # zeros, not empty: a slot never checked must still hold numbers, not NaNs.
            return torch.zeros(count, dtype=self.torch_dtype, device=self.device)

        return Buffers(self.op, self.elements, self.chunk, self.rank * self.chunk,
                       self.inplace, slots, empty)

    def _bind(self, slot: Callable[[], int]) -> Callable[[], object]:
        """One call on the buffers' slot `slot()` (asked at each call)."""
        import torch.distributed as dist  # lazy: torch is optional

        if self.api == "nccl":
            return self._bind_direct(slot)
        views = self.buffers.views
        if self.op == "allreduce":
            return lambda: dist.all_reduce(views(slot())[1])
        # torch 2.13 renamed the *_tensor forms and warns on the old names.
        if self.op == "allgather":
            gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        else:
            gather = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor

        def call() -> object:
            inp, out = views(slot())
            return gather(out, inp)

        return call

    def _bind_direct(self, slot: Callable[[], int]) -> Callable[[], object]:
        """This process's own NCCL communicator (rank 0's unique id broadcast through the
        process group, once per process), called on whatever stream is current at each
        call."""
        import torch  # lazy: torch is optional
        import torch.distributed as dist

        def exchange(own: bytes | None) -> bytes:
            shared = torch.zeros(UNIQUE_ID_BYTES, dtype=torch.uint8, device=self.device)
            if own is not None:
                shared.copy_(torch.frombuffer(bytearray(own), dtype=torch.uint8))
            dist.broadcast(shared, src=0)
            return bytes(shared.cpu().tolist())

        communicator = shared_communicator(
            self.world_size, self.rank, torch.cuda.current_device(), exchange
        )
        count = self.elements if self.op == "allreduce" else self.chunk
        return bind(communicator, self.op, lambda: self.buffers.pointers(slot()), count,
                    self.dtype, lambda: int(torch.cuda.current_stream().cuda_stream))

    def info(self) -> dict[str, Any]:
        return {
            "api": self.api,
            "backend": self.backend,
            "world_size": self.world_size,
            "elements": self.elements,
            "elements_per_rank_input": self.input.numel(),
            "rotation_slots": self.buffers.slots,
            "buffer_bytes": self.buffers.nbytes(),
            **(nccl_settings() if self.device == "cuda" else {}),
        }

    def run(self) -> None:
        self._call()

    def synchronize(self) -> None:
        if self.device == "cuda":
            import torch  # lazy: torch is optional

            torch.cuda.synchronize()

    def close(self) -> None:
        if self._cuda is not None:
            self._cuda.close()
        del self.buffers, self._call, self._rotating, self._cuda
        if self.device == "cuda":
            import torch  # lazy: torch is optional

            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    # -- correctness ---------------------------------------------------------------

    def check(self) -> CheckResult:
        """Fill known inputs, run once, compare; the error is the worst rank's."""
        self.output.zero_()
        right = Expected(self.op, self.world_size, self.rank, self.elements, self.chunk,
                         self.torch_dtype, self.device)
        self.input.copy_(right.pattern(self.input.numel(), self.rank))
        self.run()
        self.synchronize()
        expected = right.output()
        if self.output.numel() == expected.numel() and bool((self.output == expected).all()):
            rel_err = 0.0
        else:
            rel_err = relative_error(self.output, expected)
        worst = self.agree_max([rel_err])[0]
        tolerance = 0.0 if exact(self.dtype, self.world_size) else TOLERANCE[self.dtype]
        return CheckResult(rel_err=worst, tolerance=tolerance)

    # -- the ranks, for the timer ----------------------------------------------------

    def barrier(self) -> None:
        import torch.distributed as dist  # lazy: torch is optional

        dist.barrier()

    def time_batches(
        self, count: int, reps: int, duty: str = "sustained", l2: str = "cold"
    ) -> list[float]:
        """This rank's seconds for each of `count` batches of `reps` calls: on GPUs, as
        `collective_cuda` says (behind a GPU-side barrier; through torch.distributed,
        graph replays when sustained); on the CPU, back to back on the host clock. Cold:
        each call on the next slot of the buffers; warm: every call on the first."""
        cold = l2 == "cold" and self.buffers.slots > 1
        call = self._rotating if cold else self._call
        self._rotated = self.buffers.slots if cold else 1
        if self.device == "cuda":
            if self._cuda is None:
                self._cuda = CudaBatches(captures_graphs(), capture_mode(self.api))
            ring = graph_ring(self.buffers.slots) if cold else 1
            return self._cuda.time(count, reps, duty, call, ring)
        times = []
        for _ in range(count):
            began = time.perf_counter()
            for _ in range(reps):
                call()
            times.append(time.perf_counter() - began)
        return times

    def timing_info(self) -> dict[str, Any]:
        """How the samples were taken, for the measurement's `extra`."""
        found = self._cuda.info() if self._cuda is not None else {}
        return {**found, "rotation_slots": self._rotated}

    def agree_max(self, values: list[float]) -> list[float]:
        """Each value's maximum over the ranks (every rank gets the same list)."""
        import torch  # lazy: torch is optional
        import torch.distributed as dist

        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return [float(v) for v in tensor.tolist()]

    def per_rank(self, value: float) -> list[float]:
        """Every rank's `value`, in rank order."""
        import torch  # lazy: torch is optional
        import torch.distributed as dist

        tensor = torch.zeros(self.world_size, dtype=torch.float64, device=self.device)
        tensor[self.rank] = value
        dist.all_reduce(tensor)
        return [float(v) for v in tensor.tolist()]

    def _agree_no_error(self, error: BaseException | None) -> None:
        failed = self.per_rank(1.0 if error is not None else 0.0)
        if error is not None:
            raise error
        bad = [rank for rank, flag in enumerate(failed) if flag]
        if bad:
            raise RuntimeError(f"{labelled('rank', bad)} could not set up the cell (see the log)")

