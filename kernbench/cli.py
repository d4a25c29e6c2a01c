"""The command line: a thin typer layer, one core function per command.

Every `UserError` (and `SpecError`) is caught once, in `_Group.invoke`, and printed as
its one line on stderr with its exit code, and so is click's usage error (a bad option
value, an unknown option: one line, exit 2, no boxed usage) and a path too long for the
file system; Ctrl-C exits 130, a closed stdout (`| head`) 141. Options that other layers
also read (the device, the bench folders) are declared once here, with their environment
variables; precedence is defaults < configs/ < bench file < env < CLI.

Commands that measure, draw or analyze import their module when called: those pull in
scipy and matplotlib, which `kernbench list` and `--help` should not wait for.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kernbench.commands.ab_options import (
    FAIL_ON_CHOICES,
    ResumeForce,
    SideA,
    SideB,
    Switch,
    UnsetA,
    UnsetB,
)
from kernbench.commands.envvars import checked_option, known_device
from kernbench.commands.files import COMMANDS as FILE_COMMANDS
from kernbench.commands.help import ReadableHelp, ReadableTyper
from kernbench.commands.numbers import check_min_effect, check_turn_ms
from kernbench.commands.plan import plan_json, show_plan
from kernbench.commands.run_options import (
    Cells,
    Fast,
    Figures,
    FirstRound,
    Force,
    Gpus,
    Hardware,
    NNodes,
    NodeRank,
    NprocPerNode,
    OrderSeed,
    Pins,
    PinsMode,
    RdzvEndpoint,
    RdzvId,
    Resume,
    Rounds,
    RunBench,
    RunOut,
    SavePins,
    Shard,
    Timers,
)
from kernbench.commands.schema import schema_command
from kernbench.commands.streams import pipe_closed
from kernbench.commands.validate import (
    list_benches,
    print_benches,
    print_outcomes,
    validate_paths,
)
from kernbench.commands.version import VersionFlag
from kernbench.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, UserError, name_too_long
from kernbench.results.ab import AA_VERDICT_MEANINGS, VERDICT_MEANINGS
from kernbench.spec import ab_model  # the A/B numbers its help states


class _Group(ReadableHelp):
    # Click's usage errors (typer.TyperException: a bad option value, a missing or unknown
    # option or command) are printed as one line, like a UserError, not as a boxed usage.
    def make_context(self, info_name: str | None, args: list[str], *rest: Any, **kw: Any) -> Any:
        if not args:
            return super().make_context(info_name, args, *rest, **kw)  # `kernbench`: the help
        try:
            return super().make_context(info_name, args, *rest, **kw)
        except typer.TyperException as exc:  # an option of the group itself
            _echo_one_line(exc)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:  # typer would exit 130 without a word
            typer.echo("kernbench: interrupted", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UserError as exc:
            typer.echo(exc.message, err=True)
            ctx.exit(exc.code)
        except typer.TyperException as exc:  # a command's options
            _echo_one_line(exc)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            typer.echo("kernbench: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:  # `kernbench list | head -1`
            pipe_closed()
        except OSError as exc:  # a path too long, wherever a command first looks at it
            error = name_too_long(exc)
            if error is None:
                raise
            typer.echo(error.message, err=True)
            ctx.exit(error.code)


def _echo_one_line(exc: typer.TyperException) -> None:
    typer.echo(" ".join(exc.format_message().split()), err=True)


app = ReadableTyper(
    cls=_Group,
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Declarative benchmarks for compute kernels.",
)


@app.callback()
def _root(version: VersionFlag = False) -> None:
    """Declarative benchmarks for compute kernels."""

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
    typer.Option("--device", envvar="KERNBENCH_DEVICE",
                 callback=checked_option(known_device),
                 help="cpu, cuda, or auto (detected)."),
]
BenchName = Annotated[str, typer.Option("--bench", help="Bench name, or a path to its file.")]
Only = Annotated[
    list[str] | None,
    typer.Option("--only", help="Only the cells with KEY=V1[,V2] (repeatable; KEY: a "
                 "parameter, variant, or a mapping axis by its label as plan shows it: "
                 "shape=1024x1024x1024)."),
]

# --- benches: list, validate, plan --------------------------------------------------


AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


@app.command("list")
def list_command(bench_dir: BenchDirs = None, as_json: AsJson = False) -> None:
    """List the benches found: name, then description."""
    print_benches(list_benches(bench_dir or ()), as_json)


@app.command("validate")
def validate_command(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Bench files, folders or bench names; default: all.")] = None,
    bench_dir: BenchDirs = None,
) -> None:
    """Check bench files, or a folder's (default: every bench found, and the profiles).

    With no paths, a bench whose check imports a module not installed here (an `op:`
    bench's torch op) is skipped, with why; named, it fails. One that checks but that `run`
    would refuse here (a module it needs not installed) is ok, with a note saying why."""
    if not print_outcomes(validate_paths(paths or (), bench_dir or ()), skip_extras=not paths):
        raise typer.Exit(EXIT_USAGE)


@app.command("plan")
def plan_command(
    bench: BenchName,
    device: Device = "auto",
    only: Only = None,
    bench_dir: BenchDirs = None,
    as_json: AsJson = False,
) -> None:
    """Show the cells a run would measure, and a rough estimate of its time."""
    if as_json:
        typer.echo(plan_json(bench, device, bench_dir or (), only=only or ()), nl=False)
        return
    show_plan(bench, device, bench_dir or (), only=only or ())


# --- schemas -------------------------------------------------------------------------


app.command("schema")(schema_command)


# --- runs: run, render --------------------------------------------------------------


@app.command("run")
def run_command(
    bench: RunBench = None,
    out: RunOut = None,
    device: Device = "auto",
    rounds: Rounds = None,
    fast: Fast = False,
    resume: Resume = None,
    pins: Pins = None,
    pins_mode: PinsMode = None,
    save_pins: SavePins = False,
    timers: Timers = None,
    hardware: Hardware = None,
    first_round: FirstRound = 1,
    figures: Figures = None,
    only: Only = None,
    cells: Cells = None,
    shard: Shard = None,
    order_seed: OrderSeed = None,
    nnodes: NNodes = None,
    node_rank: NodeRank = None,
    nproc_per_node: NprocPerNode = None,
    rdzv_endpoint: RdzvEndpoint = None,
    rdzv_id: RdzvId = None,
    gpus: Gpus = None,
    force: Force = False,
    bench_dir: BenchDirs = None,
) -> None:
    """Measure a bench: every cell, every round, then results.json and figures."""
    from kernbench.commands.run import RunRequest, run

    code = run(RunRequest(
        bench=bench, bench_dirs=bench_dir or (), out=out, device=device, rounds=rounds,
        first_round=first_round, fast=fast, resume=resume, pins=pins, pins_mode=pins_mode,
        save_pins=save_pins, timers=timers, hardware=hardware, figures=figures,
        only=only or (), cells=cells, shard=shard,
        order_seed=order_seed, nnodes=nnodes, node_rank=node_rank,
        nproc_per_node=nproc_per_node, rdzv_endpoint=rdzv_endpoint, rdzv_id=rdzv_id,
        gpus=gpus, force=force,
    ))
    raise typer.Exit(code)


# --- saved files: collect, render, report, export, compare, merge -----------------------

for _name, _command in FILE_COMMANDS.items():
    app.command(_name)(_command)


# --- A/B: ab, summarize -----------------------------------------------------------------


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    """Given on the command line, not by its environment variable or its default."""
    # By name: typer vendors its own click, whose ParameterSource is not click's.
    return getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"


AB_HELP = f"""A/B a switch over rounds of fresh processes; a verdict per cell.

The threshold is the minimum effect (--min-effect). {VERDICT_MEANINGS} {AA_VERDICT_MEANINGS}

Options not given come from the bench's `ab:` block, then the defaults."""


@app.command("ab", help=AB_HELP)
def ab_command(
    ctx: typer.Context,
    bench: RunBench = None,
    switch: Switch = None,
    a: SideA = None,
    b: SideB = None,
    a_unset: UnsetA = None,
    b_unset: UnsetB = None,
    rounds: Annotated[
        str | None,
        typer.Option("--rounds", help=f"Rounds, {ab_model.MIN_ROUNDS} to {ab_model.MAX_ROUNDS} "
                     f"(default {ab_model.DEFAULT_ROUNDS}); auto[:MAX]: "
                     f"{ab_model.DEFAULT_ROUNDS}, then one more at a time while a cell is "
                     f"unstable, up to MAX (default {ab_model.AUTO_MAX_ROUNDS})."),
    ] = None,
    aa: Annotated[
        bool | None, typer.Option("--aa/--no-aa", help="Also run A/A rounds: a noise floor.")
    ] = None,
    min_effect: Annotated[
        float | None,
        typer.Option("--min-effect", callback=check_min_effect,
                     help=f"Smallest effect worth a call, % (default "
                     f"{ab_model.DEFAULT_MIN_EFFECT:g}; 0 to {ab_model.MIN_EFFECT_MAX:g})."),
    ] = None,
    schedule: Annotated[
        str | None,
        typer.Option("--schedule", help=f"{' or '.join(ab_model.AB_SCHEDULES)} (default "
                     f"{ab_model.DEFAULT_SCHEDULE}); interleaved: the sides take turns per cell; "
                     "sequential: each side a whole run after the other."),
    ] = None,
    turn_ms: Annotated[
        float | None,
        typer.Option("--turn-ms", callback=check_turn_ms,
                     help=f"Interleaved: the length a turn aims at, ms (default "
                     f"{ab_model.DEFAULT_TURN_MS:g}; at most {ab_model.MAX_TURN_MS})."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output folder; default runs/ab_VAR_<UTC>/.")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option("--resume", help="Continue an interrupted A/B in this folder: its "
                     "finished sides are kept."),
    ] = None,
    fail_on: Annotated[
        str | None, typer.Option("--fail-on", help=f"{FAIL_ON_CHOICES}: exit 1 when a "
                                 "cell is called so (a CI gate; needs "
                                 f"{ab_model.GATE_MIN_ROUNDS} rounds or more).")
    ] = None,
    device: Device = "auto",
    bench_dir: BenchDirs = None,
    only: Only = None,
    force: ResumeForce = False,
) -> None:
    from kernbench.ab.run import ab

    outcome = ab(
        bench, resume, fail_on, switch=switch, a=a, b=b, a_unset=a_unset, b_unset=b_unset,
        rounds=rounds, aa=aa, min_effect=min_effect, schedule=schedule, turn_ms=turn_ms,
        out=out, device=device if resume is None or _on_command_line(ctx, "device") else None,
        bench_dirs=bench_dir or (), only=only or None, force=force,
    )
    raise typer.Exit(outcome.exit_code)


@app.command("summarize")
def summarize_command(
    folder: Annotated[Path, typer.Argument(help="An A/B folder (holding ab-run.json).")],
    min_effect: Annotated[
        float | None,
        typer.Option("--min-effect", callback=check_min_effect,
                     help=f"Re-judge with this effect, % (0 to {ab_model.MIN_EFFECT_MAX:g})."),
    ] = None,
) -> None:
    """Rebuild ab.json, report.md and the figure of an A/B folder; runs nothing."""
    from kernbench.ab.outputs import (
        closing_lines,
        interrupted_line,
        summarize_locked,
        verdict_table,
    )

    report = summarize_locked(folder, min_effect, lambda line: typer.echo(line, err=True))
    typer.echo(f"wrote {folder / 'ab.json'}, {folder / 'report.md'}")
    interrupted = interrupted_line(folder, report)
    for line in verdict_table(report) + closing_lines(report) + (
            [interrupted] if interrupted else []):
        typer.echo(line, err=True)
    if report.failed_variants:
        raise typer.Exit(EXIT_FAILED)


# --- hardware: calibrate ---------------------------------------------------------------


@app.command("calibrate")
def calibrate_command(
    device: Device = "auto",
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Profile to write; default configs/hardware/NAME.yaml."),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Profile name; default from the device.")
    ] = None,
    duty: Annotated[
        str | None, typer.Option("--duty", help="The timer duty the GPU ceilings are sampled "
                                 "under: sustained (default) or isolated (as the benches to "
                                 "be read against them).")
    ] = None,
    bench: Annotated[
        str | None, typer.Option("--bench", help="Sample the GEMMs with this bench's timer "
                                 "(duty, warm-up, budget, turns) and rounds, as its cells.")
    ] = None,
    only: Annotated[
        str | None, typer.Option("--only", help="Measure only this part again: gemm, memory "
                                 "or host; the profile's other ceilings are kept as they are "
                                 "(the --out file when it exists, else the profile found).")
    ] = None,
) -> None:
    """Measure this machine's ceilings and write a hardware profile (datasheet kept beside)."""
    from kernbench.commands.calibrate import calibrate_profile

    path = calibrate_profile(device, out, name, duty, bench, only)
    typer.echo(f"wrote {path}")


def main() -> None:
    """The command line; its entry point (kernbench/__main__.py) sets the signals first."""
    try:
        app()
    except UserError as exc:  # raised outside a command (e.g. while building the app)
        print(exc.message, file=sys.stderr)
        sys.exit(exc.code)
