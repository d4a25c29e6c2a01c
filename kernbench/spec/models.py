"""Pydantic models of the documents kernbench reads: bench files and hardware profiles.

Every model forbids unknown keys, so a typo in a bench file is an error with its field
path rather than a setting silently ignored. `schemas/*.schema.json` is generated from
these models (`kernbench schema`); never edit the JSON by hand.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from kernbench.dtypes import DTYPES, ITEMSIZE
from kernbench.spec import expr
from kernbench.spec.ab_model import AbSpec
from kernbench.spec.fields import (
    Count,
    Identifier,
    PositiveFloat,
    Scalar,
    Slug,
    Strict,
)
from kernbench.spec.figures import FIGURE_NAMES
from kernbench.spec.kernel_ref import KernelRef
from kernbench.spec.op_models import ArgValue, DottedPath, InputSpec, OpCheck
from kernbench.spec.problems import FieldProblem, check_collective_timer, check_zip
from kernbench.spec.timer_model import TimerSpec

AxisValue = Scalar | list[Scalar] | dict[Identifier, Scalar]


def _number_as_expression(value: Any) -> Any:
    """`bytes: 4096` is a constant expression, which YAML reads as a number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    return value


MetricText = Annotated[
    str,
    BeforeValidator(_number_as_expression),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "number"}]}),
]
# Names a metric expression may use besides the cell's parameters.
DERIVED_NAMES = ("itemsize",)
# The most cells a bench may plan (the product of its axes, times its variants, before
# exclusions): enough for any sweep worth measuring, small enough to plan in a second.
MAX_CELLS = 100_000
YAML_SUFFIXES = (".yaml", ".yml")  # of a bench file and of a hardware profile
class Requirements(Strict):
    device: Literal["any", "cpu", "cuda"] = "any"
    world_size: Count = Field(1, ge=1, le=4096, description="Largest number of ranks needed.")
    min_gpus: Count = Field(0, ge=0)
    imports: list[Identifier] = Field(
        default_factory=list,
        description="Top-level Python modules the kernel imports when a cell runs (torch): "
        "`run` and `ab` refuse a machine without one, naming what to install.",
    )


def _kernel_or_op(schema: dict[str, Any]) -> None:
    # The model fills an op bench's description in; a kernel bench must give its own.
    schema["required"] = ["name"]
    schema["oneOf"] = [{"required": ["kernel", "description"]}, {"required": ["op"]}]


class Bench(Strict):
    """One bench file."""

    model_config = ConfigDict(json_schema_extra=_kernel_or_op)

    name: Slug
    description: str = Field(min_length=1, description="Default for an op bench: the op.")
    kernel: KernelRef | None = Field(
        None,
        description="A built-in kernel name, or module:factory imported from the bench "
        "file's folder first. A bench names either a kernel or an op.",
    )
    op: DottedPath | None = Field(
        None,
        description="An importable callable (torch.topk), called per cell with `inputs` "
        "and `args` as keywords; variants choose its `backend` (torch, compile, flag_gems).",
    )
    inputs: dict[Identifier, InputSpec] = Field(
        default_factory=dict, description="Op benches: the tensors, made fresh per cell."
    )
    args: dict[Identifier, ArgValue] = Field(
        default_factory=dict,
        description="Op benches: the other keywords; a string is an expression over the "
        "cell's parameters.",
    )
    check: OpCheck | None = Field(None, description="Op benches: a reference to compare with.")
    axes: dict[Identifier, Annotated[list[AxisValue], Field(min_length=1)]] = Field(
        default_factory=dict,
        description="Named value lists; the cells are their product. A value that is a "
        "mapping (e.g. {M: 256, N: 256, K: 256}) sets several parameters at once.",
    )
    zip: list[Annotated[list[Identifier], Field(min_length=2)]] = Field(
        default_factory=list, description="Groups of axes that move together."
    )
    exclude: list[dict[Identifier, Scalar | list[Scalar]]] = Field(
        default_factory=list,
        description=(
            "Parameter combinations to drop; a cell matching every key is excluded. A key is "
            "a parameter, `variant`, `device`, or a mapping axis by its label "
            "(`shape: 512x512x512`), as --only names them."
        ),
    )
    variants: dict[Identifier, dict[Identifier, Scalar | list[Scalar]]] = Field(
        default_factory=lambda: {"default": dict[str, Any]()},
        description="Named option sets, each passed to the kernel factory.",
    )
    dtypes: list[Literal[DTYPES]] = Field(  # type: ignore[valid-type]
        default_factory=list, description="Shorthand for a `dtype` axis."
    )
    metrics: dict[Identifier, MetricText] = Field(
        default_factory=dict,
        description="Arithmetic over cell parameters: flops, bytes (per iteration).",
    )
    rates: list[Identifier] = Field(
        default_factory=list,
        description="Metrics that count work per call (elements, tokens): each is also "
        "reported per second, as NAME_per_s (NAME/s). flops and bytes have theirs already.",
    )
    timer: TimerSpec = Field(default_factory=TimerSpec)
    rounds: Count = Field(1, ge=1, le=100, description="Independent worker processes.")
    model: Literal["none", "roofline", "alpha_beta"] = "none"
    figures: list[Literal[FIGURE_NAMES]] = Field(  # type: ignore[valid-type]
        default_factory=list,
        description="Figures drawn from the results, each where it fits the bench: "
        "throughput (TFLOP/s per GEMM shape, else the flops, bytes or first `rates` "
        "metric's rate), utilization, theory_vs_measured, stage_breakdown (cells with M, "
        "N, K); busbw, latency (collectives); time (any bench; drawn when none is named); "
        "bandwidth (GB/s against the device's, with a bytes metric).",
    )
    data: str | None = Field(
        None, description="Committed results file rendered by fast mode, relative to this file."
    )
    hardware: Slug | None = Field(
        None, description="Hardware profile name in configs/hardware; default: detected."
    )
    requires: Requirements = Field(default_factory=Requirements)
    ab: AbSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _op_describes_itself(cls, data: Any) -> Any:
        if isinstance(data, dict) and "op" in data and "description" not in data:
            return {**data, "description": str(data["op"])}
        return data

    @field_validator("variants")
    @classmethod
    def _some_variant(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            raise ValueError("at least one variant is needed")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Bench:
        if self.kernel is None and self.op is None:
            raise ValueError("give either `kernel` or `op`")
        if self.kernel is not None and self.op is not None:
            raise FieldProblem(("op",), "give either `kernel` or `op`, not both")
        given = [key for key in ("inputs", "args", "check") if getattr(self, key)]
        if self.kernel is not None and given:
            raise FieldProblem((given[0],), "`inputs`, `args` and `check` are for `op` "
                               "benches, not `kernel`")
        if self.dtypes and "dtype" in self.axes:
            raise ValueError("give the dtypes either as `dtypes` or as a `dtype` axis, not both")
        check_zip(self.axes, self.zip)
        check_collective_timer(self.kernel, self.timer.kind)
        return self

    @property
    def kernel_name(self) -> str:
        """What runs, as pins and messages name it: the kernel, or `op:PATH`."""
        return self.kernel if self.kernel is not None else f"op:{self.op}"

    def all_axes(self) -> dict[str, list[Any]]:
        """The axes with `dtypes` folded in as the `dtype` axis."""
        axes = dict(self.axes)
        if self.dtypes:
            axes["dtype"] = list(self.dtypes)
        return axes

    def cell_count_bound(self) -> int:
        """The cells before exclusions: the product of the axis lengths (a zip group counts
        once), times the variants. Exclusions only remove cells, so the plan has at most
        this many."""
        zipped = {axis for group in self.zip for axis in group[1:]}
        count = len(self.variants)
        for axis, values in self.all_axes().items():
            if axis not in zipped:
                count *= len(values)
        return count

    def axis_parameters(self) -> dict[str, str]:
        """Each parameter the axes set, with the axis that sets it (a mapping axis sets its
        keys; `dtypes` sets `dtype`)."""
        names: dict[str, str] = {}
        for axis, values in self.all_axes().items():
            for value in values:
                names.update(dict.fromkeys(value if isinstance(value, dict) else [axis], axis))
        return names

    def parameter_names(self) -> set[str]:
        """Every name a cell's parameters can hold: axis and variant keys."""
        names: set[str] = set()
        for axis, values in self.all_axes().items():
            if all(isinstance(v, dict) for v in values):
                for value in values:
                    names.update(value)
            else:
                names.add(axis)
        for options in self.variants.values():
            names.update(options)
        return names


def check_metrics(bench: Bench) -> dict[str, str]:
    """Errors per metric (`{name: message}`): a bad expression or an unknown name."""
    known = bench.parameter_names() | set(DERIVED_NAMES)
    errors: dict[str, str] = {}
    for name, text in bench.metrics.items():
        try:
            parsed = expr.parse(text)
        except expr.ExpressionError as exc:
            errors[name] = str(exc)
            continue
        unknown = sorted(parsed.names - known)
        if unknown:
            errors[name] = f"unknown name {unknown[0]!r}; known: {', '.join(sorted(known))}"
    return errors


def derived_names(params: dict[str, Any]) -> dict[str, Any]:
    """The namespace of a cell's metric expressions: its parameters plus `itemsize`."""
    namespace = dict(params)
    dtype = params.get("dtype")
    if isinstance(dtype, str) and dtype in ITEMSIZE:
        namespace.setdefault("itemsize", ITEMSIZE[dtype])
    return namespace


class Ceiling(Strict):
    """A rate with its datasheet figure and, once calibrated, the measured one."""

    datasheet: PositiveFloat | None = None
    measured: PositiveFloat | None = None

    @model_validator(mode="after")
    def _one_given(self) -> Ceiling:
        if self.datasheet is None and self.measured is None:
            raise ValueError("give a datasheet or a measured value")
        return self

    @property
    def value(self) -> float:
        """The ceiling the models use: measured where calibrated, else the datasheet."""
        return self.measured if self.measured is not None else self.datasheet  # type: ignore[return-value]


class HardwareProfile(Strict):
    """One file of configs/hardware: the single source of every model constant."""

    name: Slug
    description: str = Field(min_length=1)
    kind: Literal["cpu", "cuda"]
    match: list[str] = Field(
        default_factory=list,
        description="Substrings of the device name (CPU model or GPU name) this profile fits.",
    )
    peak_tflops: dict[Literal[DTYPES], Ceiling] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="Dense peak rate per dtype, TFLOP/s."
    )
    memory_gbs: Ceiling = Field(description="Device memory bandwidth, GB/s (read + write).")
    host_to_device_gbs: Ceiling | None = None
    device_to_host_gbs: Ceiling | None = None
    interconnect_gbs: Ceiling | None = Field(
        None, description="Per-GPU, one-direction bandwidth between devices (NVLink), GB/s."
    )
    l2_bytes: Count | None = Field(None, gt=0)
    memory_bytes: Count | None = Field(None, gt=0)
    calibration: dict[str, Scalar | list[str]] = Field(
        default_factory=dict, description="Provenance of the measured figures; a part "
        "measured again by `calibrate --only` is listed in `remeasured`, with its date."
    )

    def peak(self, dtype: str) -> float | None:
        ceiling = self.peak_tflops.get(dtype)
        return ceiling.value if ceiling is not None else None


# Bench fields added after benches were hashed, left out of the hashed form while at their
# default: a bench that does not use one keeps the hash an older kernbench gave it, which a
# resumed multi-host run's followers, and `merge`'s shards, compare exactly. A field added
# with a default joins this list (a dotted path within a nested one); one already hashed
# (timer.settle_min_s) must stay hashed, or benches recorded since would change hash instead.
HASHED_ONLY_WHEN_SET: dict[str, Any] = {"rates": [], "requires.imports": []}  # path: default


def spec_hash(bench: Bench) -> str:
    """A short hash of the normalized bench (defaults filled in, keys sorted): a run
    resumes, and shards merge, only under the same one."""
    normalized = bench.model_dump(mode="json")
    for path, default in HASHED_ONLY_WHEN_SET.items():
        *parents, leaf = path.split(".")
        node: Any = normalized
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(leaf, default) == default:
            node.pop(leaf, None)
    return hashlib.sha256(json.dumps(normalized, sort_keys=True).encode()).hexdigest()[:16]


def as_current_model(spec: dict[str, Any]) -> dict[str, Any]:
    """A bench recorded by an earlier kernbench, as this one's model reads it: fields added
    since take their defaults, so they are not taken for a change of the bench."""
    try:
        return Bench.model_validate(spec).model_dump(mode="json")
    except ValueError:  # a bench this kernbench no longer reads: compared as recorded
        return spec


def same_bench(recorded: dict[str, Any] | None, recorded_hash: str, bench: Bench) -> bool:
    """Whether `bench` is the bench a run recorded (its spec and hash): the same hash, or
    the same once the recorded spec is read as this kernbench reads it."""
    if spec_hash(bench) == recorded_hash:
        return True
    return recorded is not None and as_current_model(recorded) == bench.model_dump(mode="json")


def bench_json_schema() -> dict[str, Any]:
    return Bench.model_json_schema()


def hardware_json_schema() -> dict[str, Any]:
    return HardwareProfile.model_json_schema()


