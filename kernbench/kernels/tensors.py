"""The input tensors of an `op:` bench: how each is initialized, and making it.

An `init` is a name or a call with number literals: `randn`, `rand`, `zeros`, `ones`,
`randint(low, high)`, `bernoulli(p)`, `normal(mean, std)` (randn scaled: a layer's
weights, whose scale sets how well conditioned what follows them is). It is parsed when
the bench is validated (`parse_init`) and used when a cell is built (`make_tensor`,
which imports torch).
"""

from __future__ import annotations

import ast
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


def parse_init(text: str) -> Init:
    """`randint(0, 8)` -> Init('randint', (0, 8)); anything else is a ValueError."""
    known = ", ".join(f"{k}({', '.join('x' * n)})" if n else k for k, n in INIT_ARITY.items())
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise ValueError(f"cannot read init {text!r}; known: {known}") from None
    args: tuple[float, ...] = ()
    if isinstance(node, ast.Name):
        kind = node.id
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        kind, args = node.func.id, tuple(_number(arg, text) for arg in node.args)
    else:
        raise ValueError(f"cannot read init {text!r}; known: {known}")
    if kind not in INIT_ARITY:
        raise ValueError(f"unknown init {kind!r}; known: {known}")
    if len(args) != INIT_ARITY[kind]:
        raise ValueError(f"{kind} takes {INIT_ARITY[kind]} arguments, not {len(args)}")
    if kind == "bernoulli" and not 0 <= args[0] <= 1:
        raise ValueError(f"bernoulli(p) needs 0 <= p <= 1, not {args[0]}")
    if kind == "normal" and not args[1] > 0:
        raise ValueError(f"normal(mean, std) needs std > 0, not {args[1]}")
    if kind == "randint" and not args[0] < args[1]:
        raise ValueError(f"randint(low, high) needs low < high, not {args[0]}, {args[1]}")
    return Init(kind, args)


def _number(node: ast.expr, text: str) -> float:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand, text)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if not isinstance(node.value, bool):
            return node.value
    raise ValueError(f"init {text!r}: arguments must be numbers")


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
