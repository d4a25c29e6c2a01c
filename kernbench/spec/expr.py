"""A small, safe evaluator for the metric expressions of bench files.

`flops: 2*M*N*K` is parsed with `ast` and walked by hand: numbers, names, + - * / // %
**, unary minus, parentheses, and a few pure functions. Everything else (attribute
access, calls to anything not listed, subscripts, lambdas, comprehensions) is rejected
at parse time, so a bench file can never run code. Exponents are bounded so `9**9**9`
cannot hang the loader, and every step's result must be a finite number: `1e308*10` is
an error, never an inf stored as a metric.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

Number = int | float

MAX_EXPONENT = 64
MAX_LENGTH = 500
MAX_RESULT_BITS = 1024

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
FUNCTIONS: dict[str, Callable[..., Number]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "sqrt": math.sqrt,
}


class ExpressionError(ValueError):
    """An expression that is not plain arithmetic, or that cannot be evaluated."""


@dataclass(frozen=True)
class Expression:
    text: str
    tree: ast.expr
    names: frozenset[str]

    def evaluate(self, namespace: Mapping[str, object]) -> Number:
        missing = sorted(self.names - namespace.keys())
        if missing:
            raise ExpressionError(f"unknown name {missing[0]!r} in {self.text!r}")
        try:
            return _evaluate(self.tree, namespace)
        except ZeroDivisionError:
            raise ExpressionError(f"division by zero in {self.text!r}") from None
        except (OverflowError, ValueError, TypeError) as exc:
            # TypeError: a function given the wrong arguments, e.g. min(M) or abs(M, N)
            raise ExpressionError(f"{exc} in {self.text!r}") from None


def parse(text: str) -> Expression:
    """Parse `text` into an `Expression`, rejecting every non-arithmetic construct."""
    if not isinstance(text, str):
        raise ExpressionError("expression must be a string")
    return _parse(text)


# A bench's few expressions are evaluated on each of its cells (metrics, an op's shapes,
# inits and arguments): each text is parsed once. An Expression is never changed.
@lru_cache(maxsize=4096)
def _parse(text: str) -> Expression:
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"invalid syntax in {text!r}: {exc.msg}") from None
    names: set[str] = set()
    _check(tree, names)
    return Expression(text=text, tree=tree, names=frozenset(names))


def _check(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExpressionError(f"only numbers are allowed, not {node.value!r}")
        if not math.isfinite(node.value):
            raise ExpressionError(f"only finite numbers are allowed, not {node.value!r}")
    elif isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise ExpressionError(f"function {node.id!r} must be called")
        names.add(node.id)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, names)
        _check(node.right, names)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, names)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
        and node.args
    ):
        for arg in node.args:
            _check(arg, names)
    else:
        raise ExpressionError(f"{type(node).__name__} is not allowed (only arithmetic)")


def _evaluate(node: ast.expr, namespace: Mapping[str, object]) -> Number:
    value = _evaluate_step(node, namespace)
    if isinstance(value, complex):
        raise ExpressionError("a negative number to a fractional power is not a real number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError(f"overflow to {value}")
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise ExpressionError(f"overflow past {MAX_RESULT_BITS} bits")
    return value


def _evaluate_step(node: ast.expr, namespace: Mapping[str, object]) -> Number:
    if isinstance(node, ast.Constant):
        return node.value  # type: ignore[return-value]  # _check admitted numbers only
    if isinstance(node, ast.Name):
        value = namespace[node.id]
        # A boolean parameter (`causal: [false, true]`) is 0 or 1, as in Python, so a
        # metric can depend on it (`4*S*S*D / (1 + causal)`) and an argument pass it.
        if not isinstance(value, int | float):
            raise ExpressionError(f"{node.id!r} is {value!r}, not a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise ExpressionError(f"{node.id!r} is {value}, not a finite number")
        return value
    if isinstance(node, ast.BinOp):
        left = _evaluate(node.left, namespace)
        right = _evaluate(node.right, namespace)
        if isinstance(node.op, ast.Pow):
            if abs(right) > MAX_EXPONENT:
                raise ExpressionError(f"exponent {right} exceeds {MAX_EXPONENT}")
            # Nested powers of large bases stay under the exponent bound yet still
            # build numbers with millions of digits; bound the result's size too.
            if abs(left) > 1 and right > 0 and right * math.log2(abs(left)) > MAX_RESULT_BITS:
                raise ExpressionError(f"result of {left}**{right} is too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, namespace))
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*(_evaluate(a, namespace) for a in node.args))
    raise ExpressionError(f"{type(node).__name__} is not allowed")
