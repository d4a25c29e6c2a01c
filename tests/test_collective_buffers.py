from __future__ import annotations

import pytest

from kernbench.kernels.collective_buffers import Buffers, rotation_slots

torch = pytest.importorskip("torch")


def test_slots_span_twice_the_l2_and_one_suffices_past_it() -> None:
    l2 = 60 * 2**20
    assert rotation_slots(1024, l2) == 2 * l2 // 1024
    assert rotation_slots(2**20, l2) == 120
    assert rotation_slots(3 * 2**20, l2) == 40  # rounded up: 40 x 3 MiB >= 120 MiB
    assert rotation_slots(2**30, l2) == 1
    assert rotation_slots(1024, 0) == 1  # an unknown L2: no rotation


def empty(count: int):
    return torch.zeros(count, dtype=torch.float32)


@pytest.mark.parametrize(
    ("op", "inplace"),
    [("allreduce", True), ("allgather", True), ("allgather", False),
     ("reduce_scatter", True), ("reduce_scatter", False)],
)
def test_each_slot_is_the_first_slots_layout_moved_past_the_others(op: str, inplace: bool) -> None:
    # Rank 1 of 2, a message of 8 elements: its share is elements 4..7.
    buffers = Buffers(op, elements=8, chunk=4, own=4, inplace=inplace, slots=3, empty=empty)
    first_in, first_out = buffers.views(0)
    assert (first_in.data_ptr(), first_out.data_ptr()) == (
        buffers.input.data_ptr(), buffers.output.data_ptr())
    sizes = {"allreduce": (8, 8), "allgather": (4, 8), "reduce_scatter": (8, 4)}[op]
    seen: set[int] = set()
    for slot in range(3):
        source, target = buffers.views(slot)
        assert (source.numel(), target.numel()) == sizes
        assert buffers.pointers(slot) == (source.data_ptr(), target.data_ptr())
        if inplace and op != "allreduce":  # the share sits at the rank's place in the whole
            whole, share = (target, source) if op == "allgather" else (source, target)
            assert share.data_ptr() == whole.data_ptr() + 4 * 4
        for tensor in (source, target):
            start = tensor.data_ptr()
            assert not any(start <= p < start + 4 * tensor.numel() for p in seen - {start})
        seen |= {source.data_ptr(), target.data_ptr()}
    # Slots never overlap: one region per buffer, slots x its length.
    expected = 3 * 8 * 4 + (0 if inplace else 3 * 4 * 4)
    assert buffers.nbytes() == expected
    assert [buffers.next_slot() for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_a_buffers_slots_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Buffers("allreduce", 8, 8, 0, True, 0, empty)


@pytest.mark.parametrize(
    ("op", "inplace"),
    [("allreduce", True), ("allgather", False), ("reduce_scatter", False),
     ("allgather", True), ("reduce_scatter", True)],
)
def test_cold_calls_rotate_through_every_slot_each_on_its_own_data(op: str, inplace: bool) -> None:
    from kernbench.kernels.collective import Collective, ensure_process_group

    ensure_process_group("cpu", 1)
    collective = Collective(op, 64, inplace, "fp32", "cpu", slots=3)
    assert collective.check().rel_err == 0.0  # slot 0, as always
    for slot in range(3):
        source, target = collective.buffers.views(slot)
        target.zero_()
        source.fill_(slot + 1)
    collective.time_batches(1, 3, "sustained", "cold")  # slots 0, 1, 2
    for slot in range(3):  # one rank: each output is its own slot's input
        assert bool((collective.buffers.views(slot)[1] == slot + 1).all()), slot
    assert collective.timing_info()["rotation_slots"] == 3
    assert collective.info()["rotation_slots"] == 3
    collective.buffers.views(1)[1].zero_()
    collective.time_batches(1, 4, "sustained", "warm")  # the first slot only
    assert bool((collective.buffers.views(1)[1] == 0).all())
    assert collective.timing_info()["rotation_slots"] == 1
    collective.close()
