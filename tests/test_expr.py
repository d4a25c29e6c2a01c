"""The metric expression evaluator: arithmetic only, bounded, never eval()."""

from __future__ import annotations

import ast
import math
import operator
import time
from typing import Any

import pytest

from kernbench.spec import expr

NAMES = {"M": 4, "N": 2, "K": 3, "itemsize": 2, "bytes": 1024, "x": 1.5}


def evaluate(text: str) -> float:
    return expr.parse(text).evaluate(NAMES)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2*M*N*K", 48),
        ("(M*K + K*N + M*N) * itemsize", 52),
        ("bytes / 2**10", 1.0),
        ("M // 3 + M % 3", 2),
        ("-M + +N", -2),
        ("(-3)**3", -27),
        ("max(M, N, 10) - min(M, K)", 7),
        ("ceil(x) + floor(x) + abs(-1)", 4),
        ("log2(bytes) + sqrt(16)", 14.0),
        ("  2.5e3 * x  ", 3750.0),
    ],
)
def test_arithmetic(text: str, value: float) -> None:
    assert evaluate(text) == value


def test_names_are_collected() -> None:
    assert expr.parse("2*M*N*K + max(itemsize, 1)").names == {"M", "N", "K", "itemsize"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os')", "Call is not allowed (only arithmetic)"),
        ("__import__('os').system('true')", "Call is not allowed (only arithmetic)"),
        ("M.real", "Attribute is not allowed (only arithmetic)"),
        ("().__class__.__bases__", "Attribute is not allowed (only arithmetic)"),
        ("x[0]", "Subscript is not allowed (only arithmetic)"),
        ("lambda: 1", "Lambda is not allowed (only arithmetic)"),
        ("[i for i in x]", "ListComp is not allowed (only arithmetic)"),
        ("M if N else K", "IfExp is not allowed (only arithmetic)"),
        ("M < N", "Compare is not allowed (only arithmetic)"),
        ("M and N", "BoolOp is not allowed (only arithmetic)"),
        ("M << 2", "BinOp is not allowed (only arithmetic)"),
        ("~M", "UnaryOp is not allowed (only arithmetic)"),
        ("min()", "Call is not allowed (only arithmetic)"),
        ("max(M, key=N)", "Call is not allowed (only arithmetic)"),
        ("abs", "function 'abs' must be called"),
        ("'a'", "only numbers are allowed, not 'a'"),
        ("True", "only numbers are allowed, not True"),
        ("2*", "invalid syntax in '2*': invalid syntax"),
        ("M" * 501, "expression longer than 500 characters"),
    ],
)
def test_rejected_at_parse_time(text: str, message: str) -> None:
    with pytest.raises(expr.ExpressionError) as info:
        expr.parse(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("9**9**9", "exponent 387420489 exceeds 64 in '9**9**9'"),
        ("2**2**2**2**2", "exponent 65536 exceeds 64 in '2**2**2**2**2'"),
        ("2**-70", "exponent -70 exceeds 64 in '2**-70'"),
        (
            "(2**64)**64",
            "result of 18446744073709551616**64 is too large in '(2**64)**64'",
        ),
        ("-(2**62)**17", "result of 4611686018427387904**17 is too large in '-(2**62)**17'"),
        ("1/0", "division by zero in '1/0'"),
        ("M % 0", "division by zero in 'M % 0'"),
        ("sqrt(-1)", "math domain error in 'sqrt(-1)'"),
        ("Q * 2", "unknown name 'Q' in 'Q * 2'"),
    ],
)
def test_rejected_at_evaluation(text: str, message: str) -> None:
    started = time.perf_counter()
    with pytest.raises(expr.ExpressionError) as info:
        evaluate(text)
    assert str(info.value) == message
    assert time.perf_counter() - started < 10  # a runaway guard, not a speed target


def test_nested_powers_are_refused_without_computing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every power the evaluator computes is within MAX_RESULT_BITS: a larger one fails
    # here before Python builds its millions of digits (it would hang, not fail).
    def bounded_pow(left: Any, right: Any) -> Any:
        if abs(left) > 1 and right > 0:
            assert right * math.log2(abs(left)) <= expr.MAX_RESULT_BITS, (left, right)
        return operator.pow(left, right)

    monkeypatch.setitem(expr._BINARY, ast.Pow, bounded_pow)
    for text in ("((9**9)**9)**9", "(((M**M)**M)**M)**M", "(((9**M)**M)**M)**M",
                 "*".join(["9**64"] * 40)):
        try:
            evaluate(text)
        except expr.ExpressionError:
            pass


def test_deeply_nested_input_is_an_expression_error() -> None:
    with pytest.raises(expr.ExpressionError):
        expr.parse("(" * 240 + "1" + ")" * 240)


def test_non_number_parameter() -> None:
    with pytest.raises(expr.ExpressionError) as info:
        expr.parse("M * 2").evaluate({"M": "big"})
    assert str(info.value) == "'M' is 'big', not a number in 'M * 2'"


def test_a_boolean_parameter_counts_as_0_or_1() -> None:
    # A causal attention does about half the work: a metric halves on a boolean axis.
    flops = expr.parse("4*S*S / (1 + causal)")
    assert flops.evaluate({"S": 8, "causal": True}) == 128
    assert flops.evaluate({"S": 8, "causal": False}) == 256
    assert expr.parse("causal").evaluate({"causal": True}) is True  # an op's argument


def test_non_string_expression() -> None:
    with pytest.raises(expr.ExpressionError) as info:
        expr.parse(42)  # type: ignore[arg-type]
    assert str(info.value) == "expression must be a string"


def test_an_expression_is_parsed_once_and_a_bad_one_refused_each_time() -> None:
    # A bench's expressions are evaluated on every cell: the text is not parsed again.
    assert expr.parse("2*M*N + K") is expr.parse("2*M*N + K")
    for _ in range(2):
        with pytest.raises(expr.ExpressionError, match="invalid syntax"):
            expr.parse("2*M*")
