"""A CUDA graph captured and launched through the driver API, in thread-local capture mode.

nccl-tests captures its `-G` graphs with `cudaStreamBeginCapture(stream,
cudaStreamCaptureModeThreadLocal)` and launches them with `cudaGraphLaunch`; torch's
`torch.cuda.graph` captures in global mode, on a side stream, with its own memory pool.
On 2 H200s NCCL's calls replayed from torch's graphs of 10 read ~2x nccl-tests' `-G` per
call (docs/gpu-runs.md, eighth session). This capture is nccl-tests' own, for the
collective's sustained samples (`KERNBENCH_COLLECTIVE_CAPTURE=driver`), so the two can be
told apart. The driver library (libcuda) comes with the driver, as `cuda_device`'s L2
reset uses it; the stream handles are torch's `cuda_stream` values.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

CAPTURE_THREAD_LOCAL = 1  # CU_STREAM_CAPTURE_MODE_THREAD_LOCAL


def driver() -> Any:
    lib = ctypes.CDLL("libcuda.so.1")
    p = ctypes.c_void_p
    lib.cuStreamBeginCapture_v2.argtypes = [p, ctypes.c_int]
    lib.cuStreamEndCapture.argtypes = [p, ctypes.POINTER(p)]
    lib.cuGraphInstantiateWithFlags.argtypes = [ctypes.POINTER(p), p, ctypes.c_ulonglong]
    lib.cuGraphLaunch.argtypes = [p, p]
    lib.cuGraphExecDestroy.argtypes = [p]
    lib.cuGraphDestroy.argtypes = [p]
    return lib


def _check(result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what}: CUresult {result}")


class DriverGraph:
    """`body`'s work on stream `stream` (not the legacy default stream: capture is illegal
    there), captured once; `launch(stream)` replays it on any stream."""

    def __init__(self, body: Callable[[], object], stream: int, lib: Any = None) -> None:
        self._lib = lib if lib is not None else driver()
        self._graph, self._exec = ctypes.c_void_p(), ctypes.c_void_p()
        _check(self._lib.cuStreamBeginCapture_v2(ctypes.c_void_p(stream), CAPTURE_THREAD_LOCAL),
               "cuStreamBeginCapture")
        try:
            body()
        finally:  # a failing body must still leave the stream out of capture
            ended = self._lib.cuStreamEndCapture(ctypes.c_void_p(stream),
                                                 ctypes.byref(self._graph))
        _check(ended, "cuStreamEndCapture")
        _check(self._lib.cuGraphInstantiateWithFlags(ctypes.byref(self._exec), self._graph, 0),
               "cuGraphInstantiateWithFlags")

    def launch(self, stream: int) -> None:
        _check(self._lib.cuGraphLaunch(self._exec, ctypes.c_void_p(stream)), "cuGraphLaunch")

    def close(self) -> None:
        if self._exec:
            self._lib.cuGraphExecDestroy(self._exec)
            self._exec = ctypes.c_void_p()
        if self._graph:
            self._lib.cuGraphDestroy(self._graph)
            self._graph = ctypes.c_void_p()
