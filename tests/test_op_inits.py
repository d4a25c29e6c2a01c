"""An input's `init` arguments may be expressions over the bench's axes
(`randint(0, experts)`): names checked at load like a shape's, values on each cell at
validate, and the factory's tensors drawn within the cell's bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernbench.commands.validate import load_and_check
from kernbench.errors import SpecError
from kernbench.kernels.tensors import Init
from kernbench.spec.models import Bench
from kernbench.spec.op_factory import OpFactory, cell_inputs
from kernbench.spec.op_inits import cell_init

torch = pytest.importorskip("torch")

# The experts each token is routed to, gathered from its scores.
GATHER = (
    "name: gather\n"
    "op: torch.gather\n"
    "axes:\n"
    "  tokens: [4, 64]\n"
    "  experts: [8, 64]\n"
    "dtypes: [fp32]\n"
    "inputs:\n"
    "  input: {shape: [tokens, experts]}\n"
    '  index: {shape: [tokens, 2], init: "randint(0, experts)"}\n'
    "args: {dim: -1}\n"
    "check: {ref: torch.gather, exact: true}\n"
)


def checked(folder: Path, text: str) -> Bench:
    """The bench of `text`, loaded and checked by `kernbench validate`'s own call."""
    path = folder / "bench.yaml"
    path.write_text(text)
    return load_and_check(path)


def error_of(folder: Path, text: str) -> str:
    with pytest.raises(SpecError) as info:
        checked(folder, text)
    return str(info.value).removeprefix(f"{folder / 'bench.yaml'}:")


def test_an_init_over_the_axes_validates_and_draws_within_each_cells_bound(
    tmp_path: Path,
) -> None:
    bench = checked(tmp_path, GATHER)
    for experts in (8, 64):
        params = {"tokens": 64, "experts": experts, "dtype": "fp32"}
        assert cell_inputs(bench, params)["index"].init == Init("randint", (0, experts))
        kernel = OpFactory(bench)(backend="torch", device="cpu", **params)
        assert kernel.check is not None and kernel.check().ok  # an index past experts fails


def test_the_tensor_holds_the_whole_range_the_axis_bounds(tmp_path: Path) -> None:
    bench = checked(tmp_path, (
        "name: bounds\nop: torch.aminmax\naxes: {tokens: [4096], experts: [8, 64]}\n"
        'inputs:\n  input: {shape: [tokens], init: "randint(experts // 2, experts)"}\n'
    ))
    for experts in (8, 64):
        kernel = OpFactory(bench)(tokens=4096, experts=experts, backend="torch", device="cpu")
        low, high = kernel.run()
        # 4096 draws of at most 32 values: each is drawn (a miss has odds below 1e-50)
        assert (int(low), int(high)) == (experts // 2, experts - 1)


def test_literal_arguments_are_evaluated_as_before() -> None:
    assert cell_init("randint(-3, 8)", {}) == Init("randint", (-3, 8))
    assert cell_init("normal(0, 0.0125)", {}) == Init("normal", (0, 0.0125))
    assert cell_init("bernoulli(1 / experts)", {"experts": 4}) == Init("bernoulli", (0.25,))
    assert cell_init("randn", {}) == Init("randn")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            "randint(0, expertz)",
            "9: inputs.index.init: unknown name 'expertz'; known: experts, itemsize, tokens",
        ),
        ("randint(0, dtype)", "9: inputs.index.init: unknown name 'dtype'; known: experts,"),
        ("randint(0, experts.real)", "9: inputs.index.init: Attribute is not allowed"),
        ("randint(0, 'e')", "9: inputs.index.init: only numbers are allowed, not 'e'"),
        ("randint(experts)", "9: inputs.index.init: randint takes 2 arguments, not 1"),
        ("randint(5, 1)", "9: inputs.index.init: randint(low, high) needs low < high, not 5, 1"),
        # a value that fails on some cells only: refused at validate, naming the first
        (
            "randint(0, experts - 8)",
            "9: inputs.index.init: randint(low, high) needs low < high, not 0, 0 "
            "(cell default/tokens=4,experts=8,dtype=fp32)",
        ),
        (
            "randint(0, experts / 3)",
            "9: inputs.index.init: randint(low, high) needs whole numbers, not 0, 2.66",
        ),
        ("bernoulli(experts / 32)", "9: inputs.index.init: bernoulli(p) needs 0 <= p <= 1, not 2"),
    ],
)
def test_a_bad_init_is_an_error_at_its_line(tmp_path: Path, change: str, expected: str) -> None:
    text = GATHER.replace("randint(0, experts)", change)
    assert error_of(tmp_path, text).startswith(expected)


def test_an_unquoted_init_in_a_flow_mapping_says_to_quote_it(tmp_path: Path) -> None:
    text = GATHER.replace('"randint(0, experts)"', "randint(0, experts)")
    assert error_of(tmp_path, text).startswith(
        "9: inputs.index.init: cannot read init 'randint(0': in a {...} mapping, quote an init"
    )


def test_a_shape_negative_on_some_cells_is_refused_at_validate(tmp_path: Path) -> None:
    text = GATHER.replace("[tokens, experts]", "[tokens - 8, experts]")
    assert error_of(tmp_path, text) == (
        "8: inputs.input.shape.0: 'tokens - 8' is -4, a negative size "
        "(cell default/tokens=4,experts=8,dtype=fp32)"
    )


def test_an_init_is_read_once_for_all_its_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernbench.spec import op_inits

    reads: list[str] = []
    read = op_inits.read_init
    monkeypatch.setattr(op_inits, "read_init", lambda text: reads.append(text) or read(text))
    for experts in (8, 16, 64):
        assert cell_init("randint(1, experts + 3)", {"experts": experts}).args == (1, experts + 3)
    assert reads == ["randint(1, experts + 3)"]


def test_validate_makes_each_cells_inputs_once_not_once_per_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernbench.analyze import checks

    made: list[tuple[int, int]] = []

    def counted(bench: Any, params: dict[str, Any]) -> Any:
        made.append((params["tokens"], params["experts"]))
        return cell_inputs(bench, params)

    monkeypatch.setattr(checks, "cell_inputs", counted)
    checked(tmp_path, GATHER)  # 4 cells, each on the cpu's and the cuda's plan
    assert sorted(made) == [(4, 8), (4, 64), (64, 8), (64, 64)]
