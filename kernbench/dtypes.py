"""Dtype names used in bench files, and what the models need to know about each."""

from __future__ import annotations

# Bytes per element. "tf32" is fp32 storage computed on the tensor cores.
ITEMSIZE: dict[str, int] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "int32": 4,
    "int64": 8,
}

# Relative-error tolerance of a one-time check against a float64 reference, by dtype.
# The matrix units accumulate in fp32; the bound is set by the operand rounding.
TOLERANCE: dict[str, float] = {
    "fp64": 1e-10,
    "fp32": 1e-4,
    "tf32": 5e-3,
    "bf16": 2e-2,
    "fp16": 5e-3,
    "fp8": 1e-1,
    "int8": 0.0,
    "int32": 0.0,
    "int64": 0.0,
}

DTYPES = tuple(ITEMSIZE)

# The torch dtype (an attribute of `torch`) that holds each; tf32 is fp32 storage.
TORCH_NAMES: dict[str, str] = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp8": "float8_e4m3fn",
    "int8": "int8",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
}
