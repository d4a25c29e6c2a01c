"""The kernel contract (kernels/base.py): what a factory returns that breaks it is a
TypeError saying how when the cell is prepared, which the cell's reason shows, not an
AttributeError or a missing argument from inside a timer, nor a config space that is
silently never tuned."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kernbench.execute import pins as pinning
from kernbench.execute.worker import CellRunner
from kernbench.kernels.base import CheckResult, Kernel, as_kernel, check_result
from kernbench.plan import Cell
from kernbench.results.model import RoundResult
from kernbench.spec.timer_model import TimerSpec


def _needs_an_argument(x: int) -> None:
    del x


def prepared(factory: Callable[..., Kernel]) -> tuple[Kernel | None, RoundResult]:
    """The kernel and round result a worker prepares for a cell of `factory`'s."""
    store = pinning.PinStore(read=[], write=[])
    runner = CellRunner(factory, "k", "", TimerSpec(budget_s=0.01), store, "auto", "cpu", "cpu")
    return runner.prepare(Cell(variant="v", axes={}, params={}, index=0), 1)


@pytest.mark.parametrize(
    ("made", "message"),
    [
        (None, "a kernel factory must return a callable or a Kernel, not NoneType"),
        (Kernel(run=None), "a Kernel's run must be callable, not NoneType"),  # type: ignore[arg-type]
        (_needs_an_argument,
         "a kernel's run is called with no arguments, but _needs_an_argument needs x"),
        (Kernel(run=lambda: None, configs=[{"rows": 8}]),
         "a Kernel with configs needs build(config) to make each candidate"),
    ],
)
def test_a_broken_contract_says_how(made: object, message: str) -> None:
    with pytest.raises(TypeError) as info:
        as_kernel(made)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_what_keeps_the_contract_passes() -> None:
    assert as_kernel(lambda *args, scale=2: None).configs == []
    empty_space = Kernel(run=lambda: None, configs=[], build=lambda config: lambda: None)
    assert as_kernel(empty_space) is empty_space
    assert as_kernel(print).run is print  # a builtin: no signature to read


def test_a_check_must_return_a_check_result() -> None:
    with pytest.raises(TypeError) as info:
        check_result(0.5)
    assert str(info.value) == (
        "a kernel's check must return a CheckResult(rel_err, tolerance), not float"
    )
    result = CheckResult(rel_err=0.0, tolerance=1e-6)
    assert check_result(result) is result


def test_a_cell_whose_check_returns_a_number_fails_saying_so() -> None:
    def factory(**params: object) -> Kernel:
        return Kernel(run=lambda: None, check=lambda: 0.5)  # type: ignore[arg-type,return-value]

    kernel, result = prepared(factory)
    assert kernel is None and result.status == "failed"
    assert (result.reason or "").startswith(
        "ContractError: a kernel's check must return a CheckResult(rel_err, tolerance), "
        "not float")


def _returns_nothing(**params: object) -> None:
    del params


def _run_with_an_argument(**params: object) -> Callable[[int], None]:
    def run(y: int) -> None:
        del y

    return run


@pytest.mark.parametrize(("factory", "culprit"), [
    (_returns_nothing, _returns_nothing),
    (_run_with_an_argument, _run_with_an_argument(),),
])
def test_a_broken_contract_names_the_authors_code_not_kernbench(
    factory: Callable[..., Kernel], culprit: Callable[..., object]
) -> None:
    # It named base.py's as_kernel, where kernbench noticed: nothing there to fix.
    kernel, result = prepared(factory)
    assert kernel is None and result.status == "failed"
    code = culprit.__code__
    assert (result.reason or "").endswith(
        f" (test_kernel_base.py:{code.co_firstlineno}, in {code.co_name})")


def test_the_chosen_configs_own_check_is_run_before_it_is_timed() -> None:
    """A built kernel with a check of its own had it ignored: a config that computes the
    wrong thing was timed as if right, the parent's check passing on the parent's run."""
    def factory(**params: object) -> Kernel:
        def build(config: object) -> Kernel:
            return Kernel(run=lambda: None,
                          check=lambda: CheckResult(rel_err=float("nan"), tolerance=1e-6))

        return Kernel(run=lambda: None, check=lambda: CheckResult(rel_err=0.0, tolerance=1e-6),
                      configs=[{"rows": 8}], build=build)

    kernel, result = prepared(factory)
    assert kernel is None and result.status == "failed"
    assert result.reason == "wrong result: relative error nan exceeds tolerance 1e-06"
