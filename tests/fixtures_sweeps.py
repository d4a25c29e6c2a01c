"""Synthetic results of a bench with many series over a numeric axis and a flops metric:
an attention sweep as ops-attention measures it on an H200 (4 backends, heads and
head_dim zipped, causal, two dtypes, over seq), or any other axes given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fixtures_results import h200_profile, summary

from kernbench.plan import cell_id
from kernbench.results.model import CellResult, Results
from kernbench.spec.models import Bench

BACKENDS = ("math", "flash", "efficient", "cudnn")
SEQS = (512, 1024, 2048, 4096)
# heads and head_dim zipped: two shapes, not four.
SHAPES = ({"heads": 32, "head_dim": 64}, {"heads": 16, "head_dim": 128})


def attention_axes() -> list[dict[str, Any]]:
    return [{"batch": 2, **shape, "seq": seq, "causal": causal, "dtype": dtype}
            for shape in SHAPES for seq in SEQS for causal in (False, True)
            for dtype in ("bf16", "fp16")]


def sweep_results(
    combos: Sequence[dict[str, Any]] | None = None,
    variants: Sequence[str] = BACKENDS,
    rate_tflops: float = 400.0,
) -> Results:
    """Each variant measured at each combination of axis values (default: the attention
    sweep), `rate_tflops` times a variant's own factor, with a dtype param per cell."""
    combos = list(combos) if combos is not None else attention_axes()
    spec = Bench.model_validate({
        "name": "sweep", "description": "a sweep of many series", "kernel": "sweep:make",
        "axes": {name: list(dict.fromkeys(c[name] for c in combos))
                 for name in combos[0] if name != "dtype"},
        **({"dtypes": list(dict.fromkeys(c["dtype"] for c in combos))}
           if "dtype" in combos[0] else {}),
        "variants": {name: {} for name in variants},
        "metrics": {"flops": "4*seq*seq"},
        "model": "roofline",
        "figures": ["time", "throughput"],
    }).model_dump(mode="json")
    cells = []
    for rank, variant in enumerate(variants):
        for axes in combos:
            flops = 4.0 * axes.get("seq", 1024) ** 2 * 64
            median = flops / (rate_tflops * 1e12 * (1 + rank) / len(variants))
            cells.append(CellResult(
                id=cell_id(variant, axes), index=len(cells), variant=variant, axes=axes,
                params={"dtype": "fp32", **axes, "device": "cuda"}, status="ok",
                summary=summary(median, [median], 9),
                metrics={"flops": flops, "time_s": median, "tflops": flops / median / 1e12}))
    return Results(
        bench="sweep", spec_hash="5eed5eed5eed5eed", spec=spec,
        created_utc="2026-12-03T09:30:12Z", complete=True, device="cuda", rounds=1,
        provenance={"device_name": "NVIDIA H200"}, hardware=h200_profile(), cells=cells)
