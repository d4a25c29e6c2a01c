"""Measure a run: its folder and options saved, every round's pending cells run by
`RoundRunner`, over the hosts and GPUs it names; the journal holds the results."""

from __future__ import annotations

import socket

from kernbench.execute.gpus import choose_gpus, lanes, visible_gpus
from kernbench.execute.host_channel import HostChannel, Order
from kernbench.execute.hosts import rendezvous_timeout_s, save_host_names
from kernbench.execute.journal import is_journaled, quarantine_damaged
from kernbench.execute.options import holds_a_run, save_options
from kernbench.execute.progress import Progress, note
from kernbench.execute.rounds import RoundRunner
from kernbench.execute.run_cells import checked_plan
from kernbench.execute.run_folder import RunFolder
from kernbench.plan import Cell
from kernbench.results.provenance import device_model


def execute(run: RunFolder) -> list[Cell]:
    """Run every round's pending cells; the journal holds the results."""
    options = run.options
    cells = checked_plan(options, run.bench)
    run.path.mkdir(parents=True, exist_ok=True)
    if not holds_a_run(run.path):
        save_options(run.path, options)
    for damaged in quarantine_damaged(run.journal, cells, options.rounds_range):
        note(damaged.warning())
    total = sum(
        1
        for round_ in options.rounds_range
        for c in cells
        if not is_journaled(run.journal, round_, c.index)
    )
    progress = Progress(total, run.bench.name)
    channel = None
    if options.hosts is not None:
        channel = HostChannel.open(options.hosts, rendezvous_timeout_s())
        channel.introduce(socket.gethostname())
    gpus = choose_gpus(options.gpus, visible_gpus(), options.force) if options.gpus else []
    runner = RoundRunner(run, cells, progress, device_model(options.device), channel, lanes(gpus))
    stopped: str | None = "the leader stopped before the end (interrupted)"
    try:
        for round_ in options.rounds_range:
            runner.run(round_)
        stopped = runner.hosts_lost
    finally:
        progress.close()
        if channel is not None:
            channel.finish(runner.spawns, Order(spec_hash=options.spec_hash, device=options.device,
                                                done=True, reason=stopped))
            save_host_names(run.path, channel.host_names())
    return cells
