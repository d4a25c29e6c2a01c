"""`kernbench schema`: the JSON schemas generated from the models, written, checked, printed.

Two copies are kept, both generated and both checked: `kernbench/data/schemas/` ships in
the package (an installed kernbench has them, `--print` writes one out for an editor),
and `schemas/` at the repository's root serves the `$schema` modeline of the benches in
the repository (`../schemas/bench.schema.json`). The models are the source of truth;
`--check` fails when a file differs from them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer

from kernbench.errors import EXIT_FAILED, UserError
from kernbench.results import atomic
from kernbench.results.model import results_json_schema
from kernbench.spec.discovery import checkout_root
from kernbench.spec.models import bench_json_schema, hardware_json_schema
from kernbench.spec.yaml_document import shown_path

SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "bench.schema.json": bench_json_schema,
    "hardware.schema.json": hardware_json_schema,
    "results.schema.json": results_json_schema,
}
SUFFIX = ".schema.json"
PACKAGED = ("kernbench", "data", "schemas")


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_text(name: str) -> str:
    """The schema called `name` (`bench`, `hardware`, `results`), as the files hold it."""
    generate = SCHEMAS.get(name if name.endswith(SUFFIX) else name + SUFFIX)
    if generate is None:
        known = ", ".join(key.removesuffix(SUFFIX) for key in SCHEMAS)
        raise UserError(f"--print: unknown schema {name!r}; known: {known}")
    return render(generate())


def packaged_schema_dir() -> Path:
    # kernbench is installed as files, never zipped: the resource is a real folder.
    return Path(str(resources.files("kernbench").joinpath("data", "schemas")))


def checkout_schema_dirs(checkout: Path) -> list[Path]:
    """The two copies a checkout keeps: the repository's `schemas/`, and the packaged one."""
    return [checkout / "schemas", checkout.joinpath(*PACKAGED)]


def folders_to_check() -> list[Path]:
    """A checkout's two copies; outside one, the schemas this installed package ships."""
    checkout = checkout_root()
    return checkout_schema_dirs(checkout) if checkout else [packaged_schema_dir()]


def folders_to_write() -> list[Path]:
    checkout = checkout_root()
    if checkout is None:
        raise UserError(
            "kernbench schema: not in a kernbench checkout, so there is nothing to write; "
            "`kernbench schema --print bench` prints the bench schema"
        )
    return checkout_schema_dirs(checkout)


def write_schemas(folder: Path) -> list[Path]:
    """Write every schema into `folder`; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, generate in SCHEMAS.items():
        path = folder / name
        atomic.write_text(path, render(generate()))
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


def schema_command(
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 if the committed schemas drifted.")
    ] = False,
    print_name: Annotated[
        str | None,
        typer.Option("--print", metavar="NAME",
                     help="Print one schema (bench, hardware or results), e.g. for an editor."),
    ] = None,
) -> None:
    """Write schemas/*.schema.json and the packaged copy from the models (or check them)."""
    if print_name is not None:
        typer.echo(schema_text(print_name), nl=False)
        return
    if check:
        drifted = [path for folder in folders_to_check() for path in drifted_schemas(folder)]
        for path in drifted:
            typer.echo(f"drifted: {shown_path(path)} (run kernbench schema)", err=True)
        if drifted:
            raise typer.Exit(EXIT_FAILED)
        typer.echo("schemas up to date")
        return
    for folder in folders_to_write():
        for path in write_schemas(folder):
            typer.echo(f"wrote {shown_path(path)}")
