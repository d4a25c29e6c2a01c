"""The command line: a thin typer layer, one core function per command.

Every `UserError` (and `SpecError`) is caught once, in `_Group.invoke`, and printed as
its one line on stderr with its exit code; Ctrl-C exits 130. Options that other layers
also read (the device, the bench folders) are declared once here, with their
environment variables; precedence is defaults < configs/ < bench file < env < CLI.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kernbench.errors import EXIT_INTERRUPTED, EXIT_USAGE, SpecError, UserError


class _Group(typer.core.TyperGroup):
    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UserError as exc:
            typer.echo(exc.message, err=True)
            ctx.exit(exc.code)
        except KeyboardInterrupt:
            typer.echo("kernbench: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


app = typer.Typer(
    cls=_Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Declarative benchmarks for compute kernels.",
)

# Options shared by several commands, declared once.
BenchDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--bench-dir",
        help="Another folder of bench files (repeatable); KERNBENCH_BENCH_PATH adds more.",
    ),
]
Device = Annotated[
    str,
    typer.Option("--device", envvar="KERNBENCH_DEVICE", help="cpu, cuda, or auto (detected)."),
]
BenchName = Annotated[str, typer.Option("--bench", help="Bench name, or a path to its file.")]


# --- benches: list, validate, plan --------------------------------------------------


@app.command("list")
def list_command(bench_dir: BenchDirs = None) -> None:
    """List the benches found: name, then description."""
    from kernbench.discovery import discover
    from kernbench.loader import load_bench

    found = discover(bench_dir or ())
    width = max((len(name) for name in found), default=0)
    for name, path in found.items():
        try:
            about = load_bench(path).description
        except SpecError as exc:
            about = f"(invalid: {exc})"
        typer.echo(f"{name:<{width}}  {about}")


@app.command("validate")
def validate_command(
    paths: Annotated[list[Path] | None, typer.Argument(help="Bench files; default: all.")] = None,
    bench_dir: BenchDirs = None,
) -> None:
    """Check bench files (default: every bench found, and the hardware profiles)."""
    from kernbench.loader import shown_path
    from kernbench.validate import validate_files

    failed = False
    for path, error in validate_files(paths or None, bench_dir or ()):
        if error is None:
            typer.echo(f"ok {shown_path(path)}")
        else:
            typer.echo(error.message, err=True)
            failed = True
    if failed:
        raise typer.Exit(EXIT_USAGE)


@app.command("plan")
def plan_command(
    bench: BenchName,
    device: Device = "auto",
    bench_dir: BenchDirs = None,
) -> None:
    """Show the cells a run would measure, and a rough estimate of its time."""
    from kernbench.plan_view import show_plan

    show_plan(bench, device, bench_dir or ())


# --- schemas -------------------------------------------------------------------------


@app.command("schema")
def schema_command(
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 if the committed schemas drifted.")
    ] = False,
) -> None:
    """Write schemas/*.schema.json from the models (or check them with --check)."""
    from kernbench.discovery import project_root
    from kernbench.errors import EXIT_FAILED
    from kernbench.loader import shown_path
    from kernbench.schema_files import drifted_schemas, write_schemas

    folder = project_root() / "schemas"
    if check:
        drifted = drifted_schemas(folder)
        for path in drifted:
            typer.echo(f"drifted: {shown_path(path)} (run kernbench schema)", err=True)
        if drifted:
            raise typer.Exit(EXIT_FAILED)
        typer.echo("schemas up to date")
        return
    for path in write_schemas(folder):
        typer.echo(f"wrote {shown_path(path)}")


# --- runs: run, render, summarize (added by the run layer) ---------------------------


# --- A/B: ab (added by the A/B layer) -------------------------------------------------


# --- hardware: calibrate (added by the calibration layer) ----------------------------


def main() -> None:
    try:
        app()
    except UserError as exc:  # raised outside a command (e.g. while building the app)
        print(exc.message, file=sys.stderr)
        sys.exit(exc.code)
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
