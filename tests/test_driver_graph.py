from __future__ import annotations

import ctypes

import pytest

from kernbench.kernels.driver_graph import CAPTURE_THREAD_LOCAL, DriverGraph


class FakeDriver:
    """The driver entry points DriverGraph calls, recorded in order; `failing`: the one
    that returns an error."""

    def __init__(self, failing: str | None = None) -> None:
        self.calls: list[tuple] = []
        self.failing = failing

    def _call(self, name: str, *args: object) -> int:
        self.calls.append((name, *args))
        return 1 if name == self.failing else 0

    def cuStreamBeginCapture_v2(self, stream, mode) -> int:  # noqa: N802 - the driver's name
        return self._call("begin", stream.value, mode)

    def cuStreamEndCapture(self, stream, graph) -> int:  # noqa: N802
        ctypes.cast(graph, ctypes.POINTER(ctypes.c_void_p))[0] = 0xBEEF
        return self._call("end", stream.value)

    def cuGraphInstantiateWithFlags(self, graph_exec, graph, flags) -> int:  # noqa: N802
        ctypes.cast(graph_exec, ctypes.POINTER(ctypes.c_void_p))[0] = 0xCAFE
        return self._call("instantiate", graph.value, flags)

    def cuGraphLaunch(self, graph_exec, stream) -> int:  # noqa: N802
        return self._call("launch", graph_exec.value, stream.value)

    def cuGraphExecDestroy(self, graph_exec) -> int:  # noqa: N802
        return self._call("destroy exec", graph_exec.value)

    def cuGraphDestroy(self, graph) -> int:  # noqa: N802
        return self._call("destroy graph", graph.value)


def test_the_body_is_captured_thread_local_then_launched_on_any_stream() -> None:
    lib = FakeDriver()
    graph = DriverGraph(lambda: lib.calls.append(("body",)), stream=0x51, lib=lib)
    graph.launch(0x77)
    graph.close()
    assert lib.calls == [
        ("begin", 0x51, CAPTURE_THREAD_LOCAL),  # as nccl-tests' -G
        ("body",),
        ("end", 0x51),
        ("instantiate", 0xBEEF, 0),
        ("launch", 0xCAFE, 0x77),
        ("destroy exec", 0xCAFE),
        ("destroy graph", 0xBEEF),
    ]


def test_a_failing_body_still_ends_the_capture_and_its_error_propagates() -> None:
    lib = FakeDriver()

    def body() -> None:
        raise RuntimeError("NCCL said no")

    with pytest.raises(RuntimeError, match="NCCL said no"):
        DriverGraph(body, stream=0x51, lib=lib)
    assert [call[0] for call in lib.calls] == ["begin", "end"]


@pytest.mark.parametrize("failing", ["cuStreamBeginCapture", "cuStreamEndCapture",
                                     "cuGraphInstantiateWithFlags"])
def test_a_driver_error_names_the_call(failing: str) -> None:
    short = {"cuStreamBeginCapture": "begin", "cuStreamEndCapture": "end",
             "cuGraphInstantiateWithFlags": "instantiate"}[failing]
    with pytest.raises(RuntimeError, match=f"{failing}: CUresult 1"):
        DriverGraph(lambda: None, stream=0x51, lib=FakeDriver(failing=short))


def test_closing_the_batches_destroys_the_driver_graphs_they_captured() -> None:
    from kernbench.kernels import collective_cuda

    lib = FakeDriver()
    replay = object.__new__(collective_cuda._DriverReplay)
    replay._graph = DriverGraph(lambda: None, stream=0x51, lib=lib)
    batches = object.__new__(collective_cuda.CudaBatches)
    batches._graphs = {(print, 10): replay, (print, 3): "a torch graph"}
    batches.close()
    assert batches._graphs == {}
    assert [call[0] for call in lib.calls[-2:]] == ["destroy exec", "destroy graph"]
