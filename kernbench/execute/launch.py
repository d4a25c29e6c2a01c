"""Start the ranks of a multi-rank worker through torch's elastic launcher.

`python -m kernbench.execute.launch --nproc-per-node W -m kernbench.execute.worker TASK.json`
starts W ranks of the worker on this host, each with RANK, LOCAL_RANK, WORLD_SIZE and the
rendezvous in its environment, and exits nonzero as soon as one rank fails (the agent
tears the others down; no restarts). With `--nnodes N --rdzv-endpoint HOST:PORT --rdzv-id
ID` first, the agent meets N-1 others (one per host) at the endpoint's store, which the
leading host's runner keeps (`execute/host_channel.py`), and its W ranks are a share
of N*W.

Why the launcher API rather than `torchrun`: torchrun starts each rank in a session of
its own, so the runner's kill of the worker's process group (on a cell timeout) would
reach only the agent and leave the ranks running, still writing journal entries. The
API spawns the ranks as plain children, in the agent's process group, and each rank
also asks the kernel to kill it when the agent dies (Linux), so no rank outlives it.
"""

from __future__ import annotations

import os
import runpy
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kernbench.errors import is_whole_number
from kernbench.execute.hosts import Hosts, rendezvous_timeout_s
from kernbench.execute.lifetime import die_with_parent, die_with_runner

WORKER_MODULE = "kernbench.execute.worker"
# Seconds between the agent's looks at its ranks: how soon a dead rank is noticed.
MONITOR_INTERVAL_S = 0.1
# How long a worker (or an A/B's side) may take to reach its first cell: its imports, torch
# and CUDA start-up. Past it, it is taken to hang there (a wedged device, an import that
# waits forever) and is killed, its cells failed, so that the run goes on.
START_TIMEOUT_S = 300.0
# The agents of a multi-host job did not all meet at the rendezvous (a host missing or
# gone): the runner fails what is left instead of starting more workers that would wait.
EXIT_RENDEZVOUS = 4


def worker_argv(
    world_size: int, task_path: Path, device: str, hosts: Hosts | None = None, spawn: int = 0
) -> list[str]:
    """The command that runs `python -m kernbench.execute.worker task_path` as `world_size` ranks.

    One rank needs no launcher; the device does not change the command (the backend
    follows it inside the ranks), it is taken so callers need not special-case it.
    With `hosts`, this host starts its share of the ranks, for the leader's `spawn`-th
    worker.
    """
    del device
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, not {world_size}")
    target = ["-m", WORKER_MODULE, str(task_path)]
    if hosts is not None:
        return launcher_argv(hosts.nproc_per_node, target, rendezvous_argv(hosts, spawn))
    if world_size == 1:
        return [sys.executable, *target]
    return launcher_argv(world_size, target)


def rendezvous_argv(hosts: Hosts, spawn: int) -> list[str]:
    return ["--nnodes", str(hosts.nnodes), "--rdzv-endpoint", hosts.endpoint,
            "--rdzv-id", hosts.spawn_id(spawn)]


def launcher_argv(
    nproc: int, target: Sequence[str], rendezvous: Sequence[str] = ()
) -> list[str]:
    """The command that runs `target` (`-m module args...` or `script.py args...`) as ranks."""
    return [
        sys.executable, "-m", "kernbench.execute.launch", *rendezvous,
        "--nproc-per-node", str(nproc), *target,
    ]


def start_timeout_s(across_hosts: bool) -> float:
    """`START_TIMEOUT_S`, and across hosts the rendezvous's own timeout before it."""
    return START_TIMEOUT_S + (rendezvous_timeout_s() if across_hosts else 0.0)


def launch_env(device: str) -> dict[str, str]:
    """Environment additions for every worker, whatever the caller's environment says.

    NVLink multicast (NVLS) stays off: on shared machines it reserves fabric resources
    other jobs need. Symmetric memory would reach for the same multicast objects.
    """
    del device
    return {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    # The agent goes with the runner that started it (a kill -9 of `kernbench run`), and
    # its ranks go with it: none keeps journaling, or waiting on other hosts, alone.
    die_with_runner()
    # Each rank would otherwise start one OpenMP thread per core: W ranks oversubscribe.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousError
    from torch.distributed.launcher.api import elastic_launch

    config = launch_config(args)
    try:
        elastic_launch(config, run_target)(os.getpid(), list(args.target))
    except RendezvousError as exc:
        why = " ".join(str(exc).split())[:300] or (
            f"not all {args.nnodes} hosts joined within {rendezvous_timeout_s():g} s")
        print(f"kernbench.execute.launch: rendezvous {args.rdzv_id} at {args.endpoint} failed: "
              f"{type(exc).__name__}: {why}", file=sys.stderr)
        return EXIT_RENDEZVOUS
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        code = failure.exitcode
        how = f"signal {failure.signal_name()}" if code < 0 else f"exit code {code}"
        print(f"kernbench.execute.launch: rank {rank} (pid {failure.pid}) failed: {how}",
              file=sys.stderr)
        return 128 - code if code < 0 else (code or 1)
    return 0


def launch_config(args: LaunchArgs) -> Any:
    from torch.distributed.launcher.api import LaunchConfig

    several = args.nnodes > 1
    return LaunchConfig(
        min_nodes=args.nnodes,
        max_nodes=args.nnodes,
        nproc_per_node=args.nproc_per_node,
        run_id=args.rdzv_id if several else f"kernbench-{uuid.uuid4().hex[:12]}",
        rdzv_backend="c10d",
        # One host: port 0, the agent's store takes a free port. Several: the leader's
        # runner keeps the store for the whole run, so no agent hosts it, and none takes
        # it down when its worker ends while another host still needs it.
        rdzv_endpoint=args.endpoint if several else "localhost:0",
        rdzv_configs={"is_host": False, "join_timeout": int(rendezvous_timeout_s())}
        if several else {},
        max_restarts=0,
        monitor_interval=MONITOR_INTERVAL_S,
        start_method="spawn",
    )


class LaunchArgs(NamedTuple):
    nproc_per_node: int
    target: list[str]  # `-m MODULE ARGS...` or `SCRIPT ARGS...`
    nnodes: int = 1
    endpoint: str = ""  # HOST:PORT of the rendezvous store, with nnodes > 1
    rdzv_id: str = ""


USAGE = (
    "usage: python -m kernbench.execute.launch [--nnodes N --rdzv-endpoint HOST:PORT "
    "--rdzv-id ID] --nproc-per-node N (-m MODULE | SCRIPT) [ARGS...]"
)
_RENDEZVOUS_FLAGS = ("--nnodes", "--rdzv-endpoint", "--rdzv-id")


def _parse(argv: Sequence[str] | None) -> LaunchArgs:
    # By hand: argparse would take the target's own `-m` or `--flag` for its options.
    args = list(sys.argv[1:] if argv is None else argv)
    rendezvous: dict[str, str] = {}
    while len(args) >= 2 and args[0] in _RENDEZVOUS_FLAGS:
        rendezvous[args[0]] = args[1]
        args = args[2:]
    if len(args) < 2 or args[0] != "--nproc-per-node" or not is_whole_number(args[1]):
        raise SystemExit(f"{USAGE}\nkernbench.launch: start with --nproc-per-node N")
    count, target = int(args[1]), args[2:]
    if count < 1:
        raise SystemExit(f"{USAGE}\nkernbench.launch: --nproc-per-node must be at least 1")
    if not target or target == ["-m"]:
        raise SystemExit(f"{USAGE}\nkernbench.launch: give -m MODULE or a script to run")
    nnodes = rendezvous.get("--nnodes", "1")
    if not is_whole_number(nnodes) or int(nnodes) < 1:
        raise SystemExit(f"{USAGE}\nkernbench.launch: --nnodes must be at least 1")
    if int(nnodes) > 1 and len(rendezvous) != len(_RENDEZVOUS_FLAGS):
        raise SystemExit(f"{USAGE}\nkernbench.launch: --nnodes N needs --rdzv-endpoint and "
                         "--rdzv-id")
    return LaunchArgs(count, target, int(nnodes), rendezvous.get("--rdzv-endpoint", ""),
                      rendezvous.get("--rdzv-id", ""))


def run_target(agent_pid: int, target: list[str]) -> None:
    """One rank: die with the agent, then run `target` as `python` would."""
    die_with_parent(agent_pid)
    if target[0] == "-m":
        module, *rest = target[1:]
        sys.argv = [module, *rest]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(target)
        runpy.run_path(target[0], run_name="__main__")


if __name__ == "__main__":
    sys.exit(main())
