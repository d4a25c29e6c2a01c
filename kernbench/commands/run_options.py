"""The options of `kernbench run`, each declared once (typer `Annotated` aliases).

A run's run.json holds them (execute/options.py), and its to_argv() writes them back as
this command line. `kernbench.cli` declares the run command with them; the options other
commands share too (the device, `--only`, the bench folders) stay there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernbench.execute.pins import PIN_MODE_HELP

RunBench = Annotated[
    str | None, typer.Option("--bench", help="Bench name, or a path to its file.")
]
RunOut = Annotated[
    Path | None, typer.Option("--out", help="Output folder; default runs/NAME/<UTC>/.")
]
Rounds = Annotated[
    int | None,
    typer.Option("--rounds", min=1, max=100, help="Rounds (fresh worker processes), 1 to 100."),
]
FirstRound = Annotated[
    int, typer.Option("--first-round", min=1, help="Number of the first round (A/B sides).")
]
Fast = Annotated[
    bool,
    typer.Option("--fast", help="Redraw the figures from the bench's committed data "
                 "(also MILESTONE_FAST=1); runs nothing."),
]
Resume = Annotated[
    Path | None, typer.Option("--resume", help="Finish an interrupted run in this folder.")
]
Pins = Annotated[
    Path | None, typer.Option("--pins", help="Replay the autotune pins of this file.")
]
PinsMode = Annotated[
    str | None,
    typer.Option("--pins-mode", help="; ".join(
        f"{mode}: {does}" for mode, does in PIN_MODE_HELP.items()) + "."),
]
Timers = Annotated[
    Path | None,
    typer.Option("--timers", help="Time each cell with the timer this JSON file names for it "
                 "({cell id: timer}), as an A/B's sides share their first choices."),
]
SavePins = Annotated[
    bool,
    typer.Option("--save-pins", help="Also write the pins this run records into the bench's "
                 "pins file (pins/NAME.json beside it), to commit; by default they stay in "
                 "the run's folder."),
]
Hardware = Annotated[
    str | None,
    typer.Option("--hardware", metavar="NAME", help="Hardware profile for the model's "
                 "ceilings, over the bench's `hardware:` (default: matched to the device)."),
]
Figures = Annotated[
    bool | None,
    typer.Option("--figures/--no-figures", help="Draw the bench's figures (default: yes; "
                 "with --resume, as the run started)."),
]
Shard = Annotated[
    str | None,
    typer.Option("--shard", help="I/N: measure every N-th cell from the I-th (one GPU or "
                 "array job each); `kernbench merge` joins the results."),
]

Cells = Annotated[
    str | None,
    typer.Option("--cells", metavar="I,J,...", hidden=True, help="Of the cells chosen, those "
                 "with these plan indices (an A/B of the variant gives each side its own)."),
]

OrderSeed = Annotated[
    str | None,
    typer.Option(
        "--order-seed",
        metavar="N|plan",
        help="Seed of each round's cell order "
        "(default: a fresh one, recorded in run.json and results.json); `plan`: "
        "every round in plan order.",
    ),
]

Gpus = Annotated[
    str | None,
    typer.Option("--gpus", metavar="N|all", help="A worker per GPU (N of them, or all), the "
                 "cells dealt out by their time; results.json says which GPU measured each "
                 "round."),
]
Force = Annotated[
    bool, typer.Option("--force", help="With --gpus: run on GPUs of different models too.")
]

# A run over several hosts: the flags torchrun takes, with the same meaning.
NNodes = Annotated[
    int | None,
    typer.Option("--nnodes", min=1, help="Hosts of a multi-host run: start `kernbench run` "
                 "on each, with the same options but --node-rank."),
]
NodeRank = Annotated[
    int | None,
    typer.Option("--node-rank", min=0, help="This host's number, 0 to N-1; node 0 hosts the "
                 "rendezvous and writes results.json."),
]
NprocPerNode = Annotated[
    int | None, typer.Option("--nproc-per-node", min=1, help="Ranks each host starts.")
]
RdzvEndpoint = Annotated[
    str | None,
    typer.Option("--rdzv-endpoint", metavar="HOST:PORT",
                 help="Node 0's address and a free port: the hosts meet there."),
]
RdzvId = Annotated[
    str | None,
    typer.Option("--rdzv-id", help="Names the run at the rendezvous (default: from the "
                 "bench and the endpoint), e.g. the batch job's id."),
]
