"""A follower host of a multi-host run (node 1 and up): start this host's ranks for
each worker the leader starts, until the leader says the run is over or goes away.

A follower keeps no journal and writes no results: its folder (`NAME.nodeR`) holds the
task files and worker logs only. Its ranks are never the primary one, so they write
nothing; everything they measure reaches the leader through the collectives.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from kernbench.errors import EXIT_FAILED, EXIT_OK
from kernbench.execute import launch
from kernbench.execute.host_channel import HostChannel, LeaderGone, Order
from kernbench.execute.hosts import Hosts, rendezvous_timeout_s
from kernbench.execute.lifetime import kill_group
from kernbench.execute.progress import note
from kernbench.execute.run_folder import RunFolder
from kernbench.execute.worker_task import worker_env, write_task
from kernbench.plan import plan
from kernbench.results.provenance import device_model
from kernbench.worker_env import NODE_RANK_ENV

POLL_S = 0.1
# A follower's ranks left running this long after the leader's worker ended are killed:
# with NCCL, a peer that is gone may not be noticed before the collective timeout.
STRAGGLER_S = 10.0


def follower_folder(out: Path, node_rank: int) -> Path:
    """A follower's folder beside the leader's: named so nobody takes it for a run."""
    return out.with_name(f"{out.name}.node{node_rank}")


def follow(run: RunFolder) -> int:
    hosts = run.options.hosts
    assert hosts is not None and not hosts.leads
    channel = HostChannel.open(hosts, rendezvous_timeout_s())
    channel.introduce(socket.gethostname())
    cells = plan(run.bench, run.options.device)
    model = device_model(run.options.device)
    spawn = 0
    try:
        while True:
            order = channel.wait_order(spawn)
            if order.done:
                return _farewell(order, hosts)
            mismatch = _mismatch(order, run)
            if mismatch:
                note(f"node {hosts.node_rank}: {mismatch}; leaving the run")
                return EXIT_FAILED
            task = write_task(run, order.round, [cells[i] for i in order.cells], model)
            _run_share(run, channel, spawn, order, task)
            spawn += 1
    except LeaderGone as exc:
        note(f"node {hosts.node_rank}: the leader (node 0 at {hosts.endpoint}) is gone: {exc}")
        return EXIT_FAILED


def _run_share(run: RunFolder, channel: HostChannel, spawn: int, order: Order, task: Path) -> None:
    hosts = run.options.hosts
    assert hosts is not None
    argv = launch.worker_argv(order.world_size, task, run.options.device, hosts, spawn)
    env = worker_env(run.options.device, order.round, run.options.side)
    env[NODE_RANK_ENV] = str(hosts.node_rank)
    logs = run.path / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"r{order.round}.log", "a") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            ended_at: float | None = None
            while process.poll() is None:
                time.sleep(POLL_S)
                if ended_at is None and channel.has_ended(spawn):
                    ended_at = time.monotonic()
                if ended_at is not None and time.monotonic() - ended_at > STRAGGLER_S:
                    break
        finally:
            kill_group(process)


def _mismatch(order: Order, run: RunFolder) -> str | None:
    if order.spec_hash != run.options.spec_hash:
        return (f"the leader runs another version of the bench ({order.spec_hash[:12]}, here "
                f"{run.options.spec_hash[:12]}): every host needs the same bench file")
    if order.device != run.options.device:
        return f"the leader measures on {order.device}, this host on {run.options.device}"
    return None


def _farewell(order: Order, hosts: Hosts) -> int:
    if order.reason:
        note(f"node {hosts.node_rank}: the run ended early: {order.reason}")
        return EXIT_FAILED
    note(f"node {hosts.node_rank}: the leader finished the run; its results are on node 0")
    return EXIT_OK
