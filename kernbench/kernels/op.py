"""The kernel of an `op:` bench: a named callable on fresh tensors, run by a backend.

The spec layer evaluates the bench's expressions for the cell (`spec/op_factory.py`);
this module gets concrete shapes and values and does the torch side: tensors, the
backend, the check against a reference callable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernbench.dtypes import TOLERANCE
from kernbench.kernels import backends
from kernbench.kernels.base import CheckResult, Kernel
from kernbench.kernels.compare import Selector, compare
from kernbench.kernels.tensors import TensorPlan, make_tensor


@dataclass(frozen=True)
class OpCheckPlan:
    reference: Callable[..., Any]
    exact: bool = False
    tolerance: float | None = None  # None: the dtype's (kernbench.dtypes.TOLERANCE)
    outputs: Sequence[Selector] = field(default_factory=tuple)


@dataclass(frozen=True)
class OpCall:
    """One cell's call: the op, its tensors' plans and its other keywords."""

    op: Callable[..., Any]
    name: str  # the dotted path, for results
    inputs: Mapping[str, TensorPlan]
    kwargs: Mapping[str, Any]
    dtype: str | None  # the cell's dtype (the default tolerance)


def make_op_kernel(
    call: OpCall, backend: str, device: str, check: OpCheckPlan | None = None
) -> Kernel:
    with backends.outside_scope():
        tensors = {name: make_tensor(plan, device) for name, plan in call.inputs.items()}
    kwargs = dict(call.kwargs)
    op = call.op

    def run_op() -> Any:
        return op(**tensors, **kwargs)

    prepared = backends.prepare(backend, run_op)
    info = {"op": call.name, "backend": backend}
    kernel = Kernel(run=prepared.run, close=prepared.close, info=info)
    if device == "cuda":
        import torch  # the op already imported it

        kernel.synchronize = torch.cuda.synchronize
    if check is not None:
        kernel.check = lambda: _check(prepared.run, tensors, kwargs, call.dtype, check)
    return kernel


def _check(
    run: Callable[[], Any],
    tensors: Mapping[str, Any],
    kwargs: Mapping[str, Any],
    dtype: str | None,
    check: OpCheckPlan,
) -> CheckResult:
    result = run()
    tolerance = check.tolerance
    if tolerance is None:
        tolerance = TOLERANCE.get(dtype or "fp32", TOLERANCE["fp32"])
    with backends.outside_scope():  # the reference is torch's, not the backend's
        # A tolerance check compares with the reference on float64 copies of the inputs;
        # an exact one on the very same inputs.
        inputs = tensors if check.exact else {k: _widened(t) for k, t in tensors.items()}
        reference = check.reference(**inputs, **kwargs)
        return compare(result, reference, check.outputs, check.exact, tolerance)


def _widened(tensor: Any) -> Any:
    return tensor.double() if tensor.dtype.is_floating_point else tensor
