"""NCCL called directly, on the caller's CUDA stream: the collective kernel's `api: nccl`.

torch.distributed runs an NCCL collective on its process group's own stream, with event
hops to and from the caller's; in a CUDA graph those hops are nodes of their own, and a
small collective pays for them (issue 17: 13.7 µs where nccl-tests' graphs read 6 µs).
Here the ranks build a communicator of their own (rank 0's unique id passed through the
process group) and call ncclAllReduce, ncclAllGather or ncclReduceScatter through ctypes
on the current stream, as nccl-tests and vLLM's pynccl do. The library is the one torch
ships (`nvidia.nccl`), so both APIs run the same NCCL.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable
from typing import Any

# ncclDataType_t and ncclRedOp_t values (nccl.h)
NCCL_DTYPES = {"int32": 2, "int64": 4, "fp16": 6, "fp32": 7, "fp64": 8, "bf16": 9}
NCCL_SUM = 0
UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES


class UniqueId(ctypes.Structure):
    # Bytes, not c_char: a c_char array reads back cut at its first NUL, and an id holds
    # many (a socket address); a cut id sends every rank's bootstrap to a wrong address,
    # where it waits forever.
    _fields_ = [("internal", ctypes.c_ubyte * UNIQUE_ID_BYTES)]

    @classmethod
    def of(cls, data: bytes) -> UniqueId:
        if len(data) != UNIQUE_ID_BYTES:
            raise ValueError(f"an NCCL unique id is {UNIQUE_ID_BYTES} bytes, not {len(data)}")
        found = cls()
        ctypes.memmove(ctypes.addressof(found), data, UNIQUE_ID_BYTES)
        return found

    def data(self) -> bytes:
        return ctypes.string_at(ctypes.addressof(self), UNIQUE_ID_BYTES)


def library_path() -> str:
    """torch's libnccl.so.2 where the `nvidia.nccl` package holds it, else the loader's."""
    try:
        import nvidia.nccl  # torch's CUDA wheels bring it
    except ImportError:
        return "libnccl.so.2"
    for base in nvidia.nccl.__path__:
        candidate = os.path.join(base, "lib", "libnccl.so.2")
        if os.path.exists(candidate):
            return candidate
    return "libnccl.so.2"


def _declare(lib: Any) -> None:
    p, size, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    lib.ncclGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
    lib.ncclCommInitRank.argtypes = [ctypes.POINTER(p), i, UniqueId, i]
    lib.ncclAllReduce.argtypes = [p, p, size, i, i, p, p]
    lib.ncclAllGather.argtypes = [p, p, size, i, p, p]
    lib.ncclReduceScatter.argtypes = [p, p, size, i, i, p, p]
    lib.ncclCommDestroy.argtypes = [p]
    lib.ncclGetErrorString.argtypes = [i]
    lib.ncclGetErrorString.restype = ctypes.c_char_p


class Nccl:
    """The few NCCL entry points the collective kernel needs."""

    def __init__(self, lib: Any = None) -> None:
        if lib is None:
            path = library_path()
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:  # the cell fails with this reason, and what to do
                raise RuntimeError(
                    f"api: nccl could not load {path} ({exc}); give the collective "
                    "`api: torch` (or KERNBENCH_COLLECTIVE_API=torch) to time "
                    "torch.distributed's calls instead") from exc
        self.lib = lib
        _declare(self.lib)

    def check(self, result: int, what: str) -> None:
        if result != 0:
            text = self.lib.ncclGetErrorString(result)
            reason = text.decode() if isinstance(text, bytes) else str(text)
            raise RuntimeError(f"{what}: NCCL error {result}: {reason}")

    def unique_id(self) -> bytes:
        found = UniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(found)), "ncclGetUniqueId")
        return found.data()


class Communicator:
    """One rank's NCCL communicator and its three collectives, on a given stream."""

    def __init__(self, nccl: Nccl, unique_id: bytes, world_size: int, rank: int) -> None:
        self.nccl = nccl
        self.comm = ctypes.c_void_p()
        shared = UniqueId.of(unique_id)
        result = nccl.lib.ncclCommInitRank(ctypes.byref(self.comm), world_size, shared, rank)
        nccl.check(result, "ncclCommInitRank")

    def all_reduce(self, buffer: int, count: int, dtype: str, stream: int) -> None:
        result = self.nccl.lib.ncclAllReduce(
            buffer, buffer, count, NCCL_DTYPES[dtype], NCCL_SUM, self.comm, stream
        )
        self.nccl.check(result, "ncclAllReduce")

    def all_gather(self, source: int, target: int, count: int, dtype: str, stream: int) -> None:
        """`count`: the elements each rank sends."""
        result = self.nccl.lib.ncclAllGather(
            source, target, count, NCCL_DTYPES[dtype], self.comm, stream
        )
        self.nccl.check(result, "ncclAllGather")

    def reduce_scatter(
        self, source: int, target: int, count: int, dtype: str, stream: int
    ) -> None:
        """`count`: the elements each rank receives."""
        result = self.nccl.lib.ncclReduceScatter(
            source, target, count, NCCL_DTYPES[dtype], NCCL_SUM, self.comm, stream
        )
        self.nccl.check(result, "ncclReduceScatter")

    def close(self) -> None:
        if self.comm:
            self.nccl.lib.ncclCommDestroy(self.comm)
            self.comm = ctypes.c_void_p()


# One communicator per rank process and device, shared by every cell of a round, as
# nccl-tests keeps one: a communicator per cell cost an init and a destroy each (a
# bootstrap across the ranks), and the first H200 run with one per cell stopped for good
# in a cell's set-up after a hundred cells. Never destroyed: the process's end frees it.
_SHARED: dict[tuple[int, int, int], Communicator] = {}


@functools.cache
def loaded() -> Nccl:
    """This process's NCCL library, loaded once (a failure is raised again on each call)."""
    return Nccl()


def shared_communicator(
    world_size: int, rank: int, device: int, exchange: Callable[[bytes | None], bytes],
    nccl: Nccl | None = None,
) -> Communicator:
    """This process's communicator for (world_size, rank, device), made on first use.

    `exchange(own)` is a collective of all ranks: rank 0 passes its new unique id, the
    others None, and each gets rank 0's back. Every rank makes its first call for the same
    cell (cells run in the same order on all ranks), so all of them take part."""
    key = (world_size, rank, device)
    if key not in _SHARED:
        nccl = nccl or loaded()
        unique_id = exchange(nccl.unique_id() if rank == 0 else None)
        _SHARED[key] = Communicator(nccl, unique_id, world_size, rank)
    return _SHARED[key]


def bind(
    communicator: Communicator,
    op: str,
    where: Callable[[], tuple[int, int]],
    count: int,
    dtype: str,
    stream: Callable[[], int],
) -> Callable[[], None]:
    """One call of `op` on the device pointers (source, target) `where()` gives, on the
    stream `stream()` names (under graph capture, the capturing stream), both asked at
    each call. `count`: the elements NCCL's call takes (allreduce: the buffer's, in place
    on the target; allgather: each rank's send; reduce_scatter: each rank's receive)."""
    if op == "allreduce":
        return lambda: communicator.all_reduce(where()[1], count, dtype, stream())
    if op == "allgather":
        return lambda: communicator.all_gather(*where(), count, dtype, stream())
    return lambda: communicator.reduce_scatter(*where(), count, dtype, stream())
