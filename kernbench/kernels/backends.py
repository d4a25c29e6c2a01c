"""How an `op:` bench's operator is run: the `backend` a variant names.

- `torch`: eager, the callable as named.
- `compile`: `torch.compile` of the call, compiled while the cell is prepared (the
  first call here), so compilation never lands in the timed region.
- `flag_gems`: the call runs inside FlagGems' `use_gems()` scope, entered when the cell
  is prepared and left when it closes (entering registers FlagGems' operators with
  torch, far too slow to do per call). kernbench's own torch work (a cell's inputs, the
  check's reference and comparison) runs `outside_scope()`: under the scope it would run
  FlagGems' kernels, which refuse float64 and empty tensors (seen on the H200); the L2
  flush, which runs per sample, asks `operators_replaced()` and uses its own kernel.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

BACKENDS = ("torch", "compile", "flag_gems")
# FlagGems' tuner keeps every choice in an on-disk database that later processes read
# instead of tuning, so its choices would bypass kernbench's pins: on the H200 an A/B's B
# side took A's choices from it and recorded no replay. An in-memory database, private to
# the process, sends every tuning through the pins. FlagGems reads the variable when it is
# imported, which an op path or a user's module may do before any cell is prepared: so it
# is set when this module is (every worker imports it before it loads a bench's op).
GEMS_TUNING_DB = ("FLAGGEMS_DB_URL", "sqlite://")
os.environ[GEMS_TUNING_DB[0]] = GEMS_TUNING_DB[1]


class BackendUnavailable(RuntimeError):
    """A backend that cannot run here (its library missing): the cell fails with this."""


@dataclass
class Prepared:
    run: Callable[[], Any]
    close: Callable[[], None] | None = None


def prepare(backend: str, call: Callable[[], Any]) -> Prepared:
    """`call` (a zero-argument call of the op on the cell's inputs) run by `backend`."""
    if backend == "torch":
        _GEMS.refuse_if_open(backend)
        return Prepared(call)
    if backend == "compile":
        _GEMS.refuse_if_open(backend)
        return Prepared(_compiled(call))
    if backend == "flag_gems":
        _GEMS.enter()
        return Prepared(call, close=_GEMS.exit)
    raise BackendUnavailable(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")


def _compiled(call: Callable[[], Any]) -> Callable[[], Any]:
    import torch  # only a compile cell pays for it (and torch is there: the op needs it)

    # dynamo caches compiled code per code object, at most a few entries each: every cell
    # of a worker shares `call`'s code, so later shapes would silently fall back to eager.
    # A copy of the code object per cell gives each cell a cache of its own.
    fresh = types.FunctionType(
        call.__code__.replace(),
        call.__globals__,
        call.__name__,
        call.__defaults__,
        call.__closure__,
    )
    compiled = torch.compile(fresh, dynamic=False)
    compiled()  # compiles now, in the cell's preparation
    return compiled


class _GemsScope:
    """The process's one `use_gems()` scope, shared by the flag_gems cells held at once.

    The scope is process-wide (it registers FlagGems' kernels for torch's operators), so
    a torch cell held beside an open scope would silently run FlagGems' code: refused."""

    def __init__(self) -> None:
        self.holders = 0
        self.scope: Any = None

    def enter(self) -> None:
        if self.holders == 0:
            try:
                import flag_gems  # optional: only flag_gems cells need it
            except ImportError as exc:
                raise BackendUnavailable(
                    f"backend flag_gems: cannot import flag_gems ({exc}); "
                    "pip install 'kernbench[gpu]' on a CUDA machine"
                ) from None
            scope = flag_gems.use_gems()
            scope.__enter__()
            self.scope = scope
        self.holders += 1

    def exit(self) -> None:
        self.holders -= 1
        if self.holders == 0 and self.scope is not None:
            scope, self.scope = self.scope, None
            scope.__exit__(None, None, None)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """The scope left for a block of kernbench's own work, then entered again."""
        if self.scope is None:  # none open, or already left by an outer block
            yield
            return
        scope, self.scope = self.scope, None
        scope.__exit__(None, None, None)
        try:
            yield
        finally:
            import flag_gems  # imported: the scope was open

            again = flag_gems.use_gems()
            again.__enter__()
            self.scope = again

    def refuse_if_open(self, backend: str) -> None:
        if self.holders:
            raise BackendUnavailable(
                f"backend {backend}: a flag_gems cell holds FlagGems' scope open in this "
                "process, which would run this cell's op too; A/B one backend at a time "
                "(--only variant=...)"
            )


_GEMS = _GemsScope()


def outside_scope() -> Any:
    """A context in which torch runs its own kernels, whatever backend's scope is open."""
    return _GEMS.suspended()


def operators_replaced() -> bool:
    """Whether a backend's scope has replaced torch's operators in this process now."""
    return _GEMS.scope is not None
