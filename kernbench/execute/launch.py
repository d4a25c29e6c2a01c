"""Start the ranks of a multi-rank worker through torch's elastic launcher.

`python -m kernbench.execute.launch --nproc-per-node W -m kernbench.execute.worker TASK.json`
starts W ranks of the worker on this host, each with RANK, LOCAL_RANK, WORLD_SIZE and the
rendezvous in its environment, and exits nonzero as soon as one rank fails (the agent
tears the others down; no restarts).

Why the launcher API rather than `torchrun`: torchrun starts each rank in a session of
its own, so the runner's kill of the worker's process group (on a cell timeout) would
reach only the agent and leave the ranks running, still writing journal entries. The
API spawns the ranks as plain children, in the agent's process group, and each rank
also asks the kernel to kill it when the agent dies (Linux), so no rank outlives it.
"""

from __future__ import annotations

import ctypes
import os
import runpy
import signal
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

WORKER_MODULE = "kernbench.execute.worker"
# Seconds between the agent's looks at its ranks: how soon a dead rank is noticed.
MONITOR_INTERVAL_S = 0.1
_PR_SET_PDEATHSIG = 1


def worker_argv(world_size: int, task_path: Path, device: str) -> list[str]:
    """The command that runs `python -m kernbench.execute.worker task_path` as `world_size` ranks.

    One rank needs no launcher; the device does not change the command (the backend
    follows it inside the ranks), it is taken so callers need not special-case it.
    """
    del device
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, not {world_size}")
    target = ["-m", WORKER_MODULE, str(task_path)]
    if world_size == 1:
        return [sys.executable, *target]
    return launcher_argv(world_size, target)


def launcher_argv(world_size: int, target: Sequence[str]) -> list[str]:
    """The command that runs `target` (`-m module args...` or `script.py args...`) as ranks."""
    return [
        sys.executable, "-m", "kernbench.execute.launch", "--nproc-per-node", str(world_size),
        *target,
    ]


def launch_env(device: str) -> dict[str, str]:
    """Environment additions for every worker, whatever the caller's environment says.

    NVLink multicast (NVLS) stays off: on shared machines it reserves fabric resources
    other jobs need. Symmetric memory would reach for the same multicast objects.
    """
    del device
    return {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    # Each rank would otherwise start one OpenMP thread per core: W ranks oversubscribe.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=args.nproc_per_node,
        run_id=f"kernbench-{uuid.uuid4().hex[:12]}",
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",  # port 0: the agent's store takes a free port
        max_restarts=0,
        monitor_interval=MONITOR_INTERVAL_S,
        start_method="spawn",
    )
    try:
        elastic_launch(config, run_target)(os.getpid(), list(args.target))
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        code = failure.exitcode
        how = f"signal {failure.signal_name()}" if code < 0 else f"exit code {code}"
        print(f"kernbench.execute.launch: rank {rank} (pid {failure.pid}) failed: {how}",
              file=sys.stderr)
        return 128 - code if code < 0 else (code or 1)
    return 0


class LaunchArgs(NamedTuple):
    nproc_per_node: int
    target: list[str]  # `-m MODULE ARGS...` or `SCRIPT ARGS...`


USAGE = (
    "usage: python -m kernbench.execute.launch --nproc-per-node N (-m MODULE | SCRIPT) [ARGS...]"
)


def _parse(argv: Sequence[str] | None) -> LaunchArgs:
    # By hand: argparse would take the target's own `-m` or `--flag` for its options.
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] != "--nproc-per-node" or not args[1].isdigit():
        raise SystemExit(f"{USAGE}\nkernbench.launch: start with --nproc-per-node N")
    count, target = int(args[1]), args[2:]
    if count < 1:
        raise SystemExit(f"{USAGE}\nkernbench.launch: --nproc-per-node must be at least 1")
    if not target or target == ["-m"]:
        raise SystemExit(f"{USAGE}\nkernbench.launch: give -m MODULE or a script to run")
    return LaunchArgs(count, target)


def run_target(agent_pid: int, target: list[str]) -> None:
    """One rank: die with the agent, then run `target` as `python` would."""
    _die_with_parent(agent_pid)
    if target[0] == "-m":
        module, *rest = target[1:]
        sys.argv = [module, *rest]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(target)
        runpy.run_path(target[0], run_name="__main__")


def _die_with_parent(agent_pid: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    # The agent may have died before prctl took effect.
    if os.getppid() != agent_pid:
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
