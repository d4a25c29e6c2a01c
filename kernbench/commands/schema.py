"""`schemas/*.schema.json`, generated from the models: writing, and checking for drift.

The committed files exist for editors (the `$schema` line at the top of each bench) and
for readers; the models are the source of truth, and a test fails when the two differ.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernbench.results.model import results_json_schema
from kernbench.spec.models import bench_json_schema, hardware_json_schema

SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "bench.schema.json": bench_json_schema,
    "hardware.schema.json": hardware_json_schema,
    "results.schema.json": results_json_schema,
}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(folder: Path) -> list[Path]:
    """Write every schema into `folder`; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, generate in SCHEMAS.items():
        path = folder / name
        path.write_text(render(generate()), encoding="utf-8")
        written.append(path)
    return written


def drifted_schemas(folder: Path) -> list[Path]:
    """The schema files in `folder` that are missing or differ from the models."""
    drifted = []
    for name, generate in SCHEMAS.items():
        path = folder / name
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != render(generate()):
            drifted.append(path)
    return drifted
