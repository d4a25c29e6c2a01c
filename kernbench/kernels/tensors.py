"""The input tensors of an `op:` bench: how each is initialized, and making it.

An `init` is a name or a call: `randn`, `rand`, `zeros`, `ones`, `randint(low, high)`,
`bernoulli(p)`, `normal(mean, std)` (randn scaled: a layer's weights, whose scale sets how
well conditioned what follows them is). Its form is read when the bench is validated
(`read_init`); an argument may be an expression over the cell's parameters
(`randint(0, experts)`), which the spec layer evaluates per cell and hands to `make_init`
as a number. `make_tensor` (which imports torch) makes the tensor of one cell.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.dtypes import TORCH_NAMES

# Each init kind and the number of arguments it takes.
INIT_ARITY = {
    "randn": 0, "rand": 0, "zeros": 0, "ones": 0, "randint": 2, "bernoulli": 1, "normal": 2,
}
# The dtype an init makes when the input gives none: None means the cell's dtype.
INIT_DTYPE = {"randint": "int64", "bernoulli": "bool"}
TORCH_DTYPES = TORCH_NAMES


@dataclass(frozen=True)
class Init:
    kind: str
    args: tuple[float, ...] = ()


@dataclass(frozen=True)
class InitCall:
    """An init as written: its kind and the text of each argument (a number, or an
    expression the spec layer evaluates per cell)."""

    kind: str
    args: tuple[str, ...] = ()


def read_init(text: str) -> InitCall:
    """`randint(0, vocab - 1)` -> InitCall('randint', ('0', 'vocab - 1')): a known kind with
    its number of arguments, or a ValueError."""
    known = ", ".join(f"{k}({', '.join('x' * n)})" if n else k for k, n in INIT_ARITY.items())
    source = text.strip()
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        if source.count("(") > source.count(")"):  # YAML's `{init: randint(0, n)}` cut at ','
            raise ValueError(
                f"cannot read init {text!r}: in a {{...}} mapping, quote an init with a "
                'comma (init: "randint(0, n)")'
            ) from None
        raise ValueError(f"cannot read init {text!r}; known: {known}") from None
    args: tuple[str, ...] = ()
    if isinstance(node, ast.Name):
        kind = node.id
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        kind = node.func.id
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise ValueError(f"cannot read init {text!r}; known: {known}")
        args = tuple(ast.unparse(arg) for arg in node.args)
    else:
        raise ValueError(f"cannot read init {text!r}; known: {known}")
    if kind not in INIT_ARITY:
        raise ValueError(f"unknown init {kind!r}; known: {known}")
    if len(args) != INIT_ARITY[kind]:
        raise ValueError(f"{kind} takes {INIT_ARITY[kind]} arguments, not {len(args)}")
    return InitCall(kind, args)


def make_init(kind: str, args: Sequence[float]) -> Init:
    """The init of one cell, its arguments numbers; values it cannot draw from are a
    ValueError."""
    if kind == "bernoulli" and not 0 <= args[0] <= 1:
        raise ValueError(f"bernoulli(p) needs 0 <= p <= 1, not {args[0]}")
    if kind == "normal" and not args[1] > 0:
        raise ValueError(f"normal(mean, std) needs std > 0, not {args[1]}")
    if kind == "randint":
        if not all(float(arg).is_integer() for arg in args):
            raise ValueError(
                f"randint(low, high) needs whole numbers, not {args[0]}, {args[1]}"
            )
        if not args[0] < args[1]:
            raise ValueError(f"randint(low, high) needs low < high, not {args[0]}, {args[1]}")
    return Init(kind, tuple(args))


@dataclass(frozen=True)
class TensorPlan:
    """One input of one cell: every expression already evaluated."""

    shape: tuple[int, ...]
    dtype: str  # a key of TORCH_DTYPES
    init: Init


def torch_dtype(name: str) -> Any:
    import torch  # an op bench's cells need torch; validating a plain bench must not

    return getattr(torch, TORCH_DTYPES[name])


def make_tensor(plan: TensorPlan, device: str) -> Any:
    """A fresh tensor for `plan` on `device`."""
    import torch  # see torch_dtype

    dtype = torch_dtype(plan.dtype)
    kind, args = plan.init.kind, plan.init.args
    if kind == "zeros":
        return torch.zeros(plan.shape, dtype=dtype, device=device)
    if kind == "ones":
        return torch.ones(plan.shape, dtype=dtype, device=device)
    if kind == "randint":
        low, high = int(args[0]), int(args[1])
        return torch.randint(low, high, plan.shape, dtype=dtype, device=device)
    if kind == "bernoulli":
        mask = torch.rand(plan.shape, device=device) < args[0]
        return mask.to(dtype)
    # randn, normal and rand: drawn in fp32 where the dtype has no generator of its own (fp8)
    draw = torch.rand if kind == "rand" else torch.randn
    wide = dtype if dtype.is_floating_point and dtype.itemsize >= 2 else torch.float32
    values = draw(plan.shape, dtype=wide, device=device)
    if kind == "normal":
        values = values * args[1] + args[0]
    return values.to(dtype)
