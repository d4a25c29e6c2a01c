"""The pydantic models: unknown keys, defaults, cross-field checks, metric names."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kernbench.spec.ab_model import AbSpec
from kernbench.spec.models import (
    Bench,
    Ceiling,
    HardwareProfile,
    bench_json_schema,
    check_metrics,
    derived_names,
)
from kernbench.spec.timer_model import TimerSpec

MINIMAL = {"name": "b", "description": "d", "kernel": "sleep"}


def bench(**fields: Any) -> Bench:
    return Bench.model_validate({**MINIMAL, **fields})


def locations(exc: pytest.ExceptionInfo[ValidationError]) -> list[tuple[Any, ...]]:
    return [tuple(error["loc"]) for error in exc.value.errors()]


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"colour": 1}, ("colour",)),
        ({"timer": {"budget": 1}}, ("timer", "budget")),
        ({"requires": {"gpus": 2}}, ("requires", "gpus")),
        ({"ab": {"switch": "X", "round": 2}}, ("ab", "round")),
    ],
)
def test_unknown_key_fails_with_its_field_path(
    fields: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    with pytest.raises(ValidationError) as info:
        bench(**fields)
    assert locations(info) == [loc]
    assert info.value.errors()[0]["type"] == "extra_forbidden"


def test_hardware_unknown_key_fails() -> None:
    with pytest.raises(ValidationError) as info:
        HardwareProfile.model_validate(
            {"name": "h", "description": "d", "kind": "cpu", "memory_gbs": {"measured": 1, "x": 2}}
        )
    assert locations(info) == [("memory_gbs", "x")]


def test_defaults() -> None:
    spec = bench()
    assert spec.variants == {"default": {}}
    assert spec.rounds == 1 and spec.model == "none" and spec.ab is None
    assert spec.timer == TimerSpec()
    assert spec.requires.world_size == 1


def test_models_are_frozen() -> None:
    with pytest.raises(ValidationError):
        bench().rounds = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"dtypes": ["fp32"], "axes": {"dtype": ["fp32"]}},
            "either as `dtypes` or as a `dtype` axis",
        ),
        ({"axes": {"a": [1]}, "zip": [["a", "b"]]}, "zip names 'b', which is not an axis"),
        ({"axes": {"a": [1], "b": [1, 2]}, "zip": [["a", "b"]]}, "have different lengths"),
        ({"axes": {"a": [1], "b": [2]}, "zip": [["a", "b"], ["b", "a"]]}, "is in two zip groups"),
        ({"variants": {}}, "at least one variant is needed"),
        ({"timer": {"min_samples": 50, "max_samples": 10}}, "max_samples must be at least"),
        ({"name": "Has Spaces"}, "String should match pattern"),
        ({"kernel": "os.system"}, "module:factory, the module as an import names it"),
        ({"axes": {"a": []}}, "List should have at least 1 item"),
        ({"figures": ["pie"]}, "Input should be 'throughput'"),
    ],
)
def test_rejected(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        bench(**fields)
    assert message in str(info.value)


def test_parameter_names_flatten_mapping_axes() -> None:
    spec = bench(
        axes={"shape": [{"M": 1, "N": 2}, {"M": 3, "K": 4}], "n": [1]},
        dtypes=["bf16"],
        variants={"v": {"backend": "torch"}},
    )
    assert spec.parameter_names() == {"M", "N", "K", "n", "dtype", "backend"}
    assert list(spec.all_axes()) == ["shape", "n", "dtype"]


def test_check_metrics() -> None:
    spec = bench(
        axes={"shape": [{"M": 1, "N": 2, "K": 3}]},
        dtypes=["fp16"],
        metrics={"flops": "2*M*N*K", "bytes": "M*itemsize", "bad": "M*Z", "worse": "M.x"},
    )
    assert check_metrics(spec) == {
        "bad": "unknown name 'Z'; known: K, M, N, dtype, itemsize",
        "worse": "Attribute is not allowed (only arithmetic)",
    }
    assert derived_names({"dtype": "fp16", "M": 1}) == {"dtype": "fp16", "M": 1, "itemsize": 2}


def test_ceiling_prefers_measured() -> None:
    assert Ceiling(datasheet=10.0).value == 10.0
    assert Ceiling(datasheet=10.0, measured=8.0).value == 8.0
    with pytest.raises(ValidationError):
        Ceiling()


@pytest.mark.parametrize(
    ("fields", "device", "settles"),
    [
        ({}, "cuda", True),
        ({}, "cpu", False),  # a CPU has no power cap to sink into
        ({"duty": "isolated"}, "cuda", False),
        ({"settle_s": 0.0}, "cuda", False),
    ],
)
def test_a_cell_settles_sustained_on_a_gpu_unless_settle_s_is_0(
    fields: dict[str, Any], device: str, settles: bool
) -> None:
    assert TimerSpec(**fields).settles(device) is settles


def test_ab_defaults() -> None:
    ab = AbSpec(switch="NVIDIA_TF32_OVERRIDE")
    assert (ab.a, ab.b, ab.rounds, ab.aa) == ("0", "1", 6, False)
    with pytest.raises(ValidationError):
        AbSpec(switch="NOT-A-NAME")


def test_schema_forbids_extra_keys() -> None:
    schema = bench_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["TimerSpec"]["additionalProperties"] is False
    assert set(schema["required"]) == {"name"}
    assert schema["oneOf"] == [{"required": ["kernel", "description"]}, {"required": ["op"]}]
