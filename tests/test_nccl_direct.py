"""The direct NCCL path's marshalling, with a fake library (no GPU, no NCCL here): what
each collective passes to NCCL, how errors read, and where `api: nccl` is refused."""

from __future__ import annotations

import ctypes

import pytest

from kernbench.kernels import collective, nccl_direct

# As a real id: a socket address, full of NUL bytes.
UNIQUE_ID = bytes([2, 0, 0x9C, 0x41, 127, 0, 0, 1]) + bytes(range(120))


class FakeFunction:
    def __init__(self, name: str, calls: list, result: int = 0) -> None:
        self.name, self.calls, self.result = name, calls, result
        self.argtypes: list = []
        self.restype = None

    def __call__(self, *args):
        self.calls.append((self.name, args))
        if self.name == "ncclGetUniqueId":
            ctypes.memmove(ctypes.addressof(args[0]._obj), UNIQUE_ID, len(UNIQUE_ID))
        if self.name == "ncclCommInitRank":
            args[0]._obj.value = 0x1234  # the communicator's handle
        if self.name == "ncclGetErrorString":
            return b"invalid argument"
        return self.result


class FakeLibrary:
    def __init__(self, failing: str = "") -> None:
        self.calls: list = []
        for name in ("ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce", "ncclAllGather",
                     "ncclReduceScatter", "ncclCommDestroy", "ncclGetErrorString"):
            setattr(self, name, FakeFunction(name, self.calls, 4 if name == failing else 0))


def test_each_collective_passes_nccl_its_buffers_counts_and_types() -> None:
    library = FakeLibrary()
    nccl = nccl_direct.Nccl(library)
    unique_id = nccl.unique_id()
    assert unique_id == UNIQUE_ID  # every byte, the NULs too
    comm = nccl_direct.Communicator(nccl, unique_id, world_size=2, rank=1)
    _, (_, world, shared, rank) = library.calls[-1]
    assert (world, rank, shared.data()) == (2, 1, unique_id)
    for op, count, expected in [
        ("allreduce", 512, ("ncclAllReduce", (0x2000, 0x2000, 512, 7, nccl_direct.NCCL_SUM))),
        ("allgather", 256, ("ncclAllGather", (0x1000, 0x2000, 256, 9))),
        ("reduce_scatter", 512, ("ncclReduceScatter", (0x1000, 0x2000, 512, 6, 0))),
    ]:
        dtype = {"allreduce": "fp32", "allgather": "bf16", "reduce_scatter": "fp16"}[op]
        nccl_direct.bind(comm, op, lambda: (0x1000, 0x2000), count, dtype, lambda: 0xABC)()
        name, args = library.calls[-1]
        assert (name, args[: len(expected[1])]) == expected
        assert args[-1] == 0xABC  # the stream named when the call is made
    # The pointers too are asked at each call: rotating buffers move them.
    slots = iter([(0x1000, 0x2000), (0x5000, 0x6000)])
    call = nccl_direct.bind(comm, "allgather", lambda: next(slots), 256, "bf16", lambda: 0)
    call()
    call()
    assert [args[:2] for _, args in library.calls[-2:]] == [(0x1000, 0x2000), (0x5000, 0x6000)]
    comm.close()
    assert library.calls[-1][0] == "ncclCommDestroy" and not comm.comm


def test_an_nccl_error_names_the_call_and_the_reason() -> None:
    nccl = nccl_direct.Nccl(FakeLibrary(failing="ncclCommInitRank"))
    with pytest.raises(RuntimeError, match="ncclCommInitRank: NCCL error 4: invalid argument"):
        nccl_direct.Communicator(nccl, b"\x00" * nccl_direct.UNIQUE_ID_BYTES, 2, 0)


def test_the_unique_id_is_the_size_nccl_expects() -> None:
    assert ctypes.sizeof(nccl_direct.UniqueId) == 128
    with pytest.raises(ValueError, match="128 bytes, not 1"):
        nccl_direct.UniqueId.of(b"\x02")


def test_api_nccl_needs_cuda_and_unknown_apis_are_refused() -> None:
    with pytest.raises(ValueError, match="api: nccl .* needs device cuda"):
        collective.make(op="allreduce", bytes=1024, device="cpu", api="nccl")
    with pytest.raises(ValueError, match="unknown api 'mpi'"):
        collective.make(op="allreduce", bytes=1024, device="cpu", api="mpi")


def test_the_api_comes_from_the_environment_for_an_ab(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(collective.API_ENV, "nccl")
    with pytest.raises(ValueError, match="needs device cuda"):
        collective.make(op="allreduce", bytes=1024, device="cpu")


def test_a_process_makes_one_communicator_and_every_cell_shares_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nccl_direct, "_SHARED", {})
    library = FakeLibrary()
    exchanged: list[bytes | None] = []

    def exchange(own: bytes | None) -> bytes:
        exchanged.append(own)
        return UNIQUE_ID

    first = nccl_direct.shared_communicator(2, 0, 0, exchange, nccl_direct.Nccl(library))
    again = nccl_direct.shared_communicator(2, 0, 0, exchange, nccl_direct.Nccl(library))
    assert again is first
    assert exchanged == [UNIQUE_ID]  # rank 0 made the id, once
    assert [name for name, _ in library.calls] == ["ncclGetUniqueId", "ncclCommInitRank"]
    other = nccl_direct.shared_communicator(2, 1, 1, exchange, nccl_direct.Nccl(library))
    assert other is not first and exchanged[-1] is None  # rank 1 only receives


def test_a_missing_nccl_library_says_how_to_time_torch_instead(monkeypatch) -> None:
    monkeypatch.setattr(nccl_direct, "library_path", lambda: "/nowhere/libnccl.so.2")
    with pytest.raises(RuntimeError, match="could not load /nowhere/libnccl.so.2.*api: torch"):
        nccl_direct.Nccl()
