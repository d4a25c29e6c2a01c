"""The kernel factory of a bench: its `kernel:` resolved, or its `op:` turned into one.

An op bench's factory evaluates the bench's shapes, inits and arguments for each cell
(with the same safe evaluator as its metrics) and hands concrete values to
`kernbench/kernels/op.py`, which makes the tensors and runs the op by its backend.
Validate evaluates every cell's inputs the same way (`cell_inputs`), so a value that
fails on some cells only is refused at its line before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernbench.kernels import kernel_source_path, resolve_factory
from kernbench.kernels.base import Kernel
from kernbench.kernels.callables import callable_source_path, resolve_callable
from kernbench.kernels.op import OpCall, OpCheckPlan, make_op_kernel
from kernbench.kernels.tensors import INIT_DTYPE, Init, TensorPlan
from kernbench.spec import expr
from kernbench.spec.models import Bench, derived_names
from kernbench.spec.op_inits import cell_init
from kernbench.spec.op_models import ArgValue


def bench_factory(bench: Bench, bench_dir: Path) -> Callable[..., object]:
    """What a worker calls once per cell with the cell's parameters."""
    if bench.op is not None:
        return OpFactory(bench, bench_dir)
    assert bench.kernel is not None
    return resolve_factory(bench.kernel, bench_dir)


def bench_source(bench: Bench, bench_dir: Path) -> Path | None:
    """The file whose text fingerprints the bench's pins: the kernel's module, or an op's
    module beside the bench (a library's op has none: the library versions in the
    fingerprint cover it)."""
    if bench.op is not None:
        return callable_source_path(bench.op, bench_dir)
    assert bench.kernel is not None
    return kernel_source_path(bench.kernel, bench_dir)


class OpFactory:
    def __init__(self, bench: Bench, bench_dir: Path | None = None) -> None:
        assert bench.op is not None
        self.bench = bench
        self.op = resolve_callable(bench.op, bench_dir)
        check = bench.check
        self.check = (
            None
            if check is None
            else OpCheckPlan(
                reference=resolve_callable(check.ref, bench_dir),
                exact=check.exact,
                tolerance=check.tolerance,
                outputs=tuple(check.outputs),
            )
        )

    def __call__(self, *, device: str, backend: str = "torch", **params: Any) -> Kernel:
        inputs = cell_inputs(self.bench, params)
        namespace = derived_names(params)
        kwargs = {key: _value(value, namespace) for key, value in self.bench.args.items()}
        call = OpCall(
            op=self.op,
            name=str(self.bench.op),
            inputs=inputs,
            kwargs=kwargs,
            dtype=params.get("dtype"),
        )
        return make_op_kernel(call, backend, device, self.check)


class CellInputError(ValueError):
    """An input one cell's parameters cannot make, at its field."""

    def __init__(self, field: tuple[str, ...], message: str) -> None:
        super().__init__(f"{'.'.join(field)}: {message}")
        self.field = field
        self.message = message


def cell_inputs(bench: Bench, params: dict[str, Any]) -> dict[str, TensorPlan]:
    """Each input of the cell whose parameters are `params`: its shape, dtype and init
    evaluated; a CellInputError where a value cannot make one."""
    namespace = derived_names(params)
    inputs = {}
    for name, spec in bench.inputs.items():
        init = _init(spec.init, namespace, ("inputs", name, "init"))
        shape = tuple(
            _dimension(d, namespace, ("inputs", name, "shape", str(i)))
            for i, d in enumerate(spec.shape)
        )
        # validate made sure one of these is there
        tensor_dtype = spec.dtype or INIT_DTYPE.get(init.kind) or str(params.get("dtype"))
        inputs[name] = TensorPlan(shape, tensor_dtype, init)
    return inputs


def _init(text: str, namespace: dict[str, Any], field: tuple[str, ...]) -> Init:
    try:
        return cell_init(text, namespace)
    except ValueError as exc:  # an ExpressionError, or values the init cannot draw from
        raise CellInputError(field, str(exc)) from None


def _dimension(value: int | str, namespace: dict[str, Any], field: tuple[str, ...]) -> int:
    try:
        number = _value(value, namespace)
    except expr.ExpressionError as exc:
        raise CellInputError(field, str(exc)) from None
    if isinstance(number, bool) or not isinstance(number, int | float) or number != int(number):
        raise CellInputError(field, f"{value!r} is {number!r}, not a whole number")
    if number < 0:
        raise CellInputError(field, f"{value!r} is {number}, a negative size")
    return int(number)


def _value(value: ArgValue, namespace: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [_value(item, namespace) for item in value]
    if isinstance(value, str):
        return expr.parse(value).evaluate(namespace)
    return value
