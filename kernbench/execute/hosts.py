"""A run spread over several hosts: the torchrun-like settings, checked once.

`kernbench run --nnodes N --node-rank R --nproc-per-node P --rdzv-endpoint HOST:PORT` is
started once per host. Node 0 leads: it hosts the rendezvous store on the endpoint's
port, runs the rounds, journals and writes results.json; the other nodes follow it
(`execute/follow.py`), starting their share of the ranks each time the leader starts
its own. The settings travel in run.json (`RunOptions.hosts`), so `--resume` meets the
same hosts again.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pydantic import Field

from kernbench.errors import UserError, seconds_from_env
from kernbench.results.jsonio import FileFormat
from kernbench.spec.fields import Strict

RENDEZVOUS_TIMEOUT_ENV = "KERNBENCH_RENDEZVOUS_TIMEOUT_S"
# torchrun's default join timeout: hosts of a batch job may start minutes apart.
DEFAULT_RENDEZVOUS_TIMEOUT_S = 600.0
HOST_NAMES_NAME = "hosts.json"
HOST_NAMES_VERSION = 1
_ENDPOINT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})$")


class Hosts(Strict):
    """Where the ranks of a multi-host run start; the same on every host but `node_rank`."""

    nnodes: int = Field(ge=2)
    node_rank: int = Field(ge=0)
    nproc_per_node: int = Field(ge=1)
    endpoint: str  # HOST:PORT of node 0, where the rendezvous store listens
    rdzv_id: str

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node

    @property
    def leads(self) -> bool:
        return self.node_rank == 0

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.endpoint.rpartition(":")
        return host.strip("[]"), int(port)

    def spawn_id(self, spawn: int) -> str:
        """The rendezvous of the leader's `spawn`-th worker: every host counts the same."""
        return f"{self.rdzv_id}-{spawn}"

    def to_argv(self) -> list[str]:
        return [
            "--nnodes", str(self.nnodes), "--node-rank", str(self.node_rank),
            "--nproc-per-node", str(self.nproc_per_node), "--rdzv-endpoint", self.endpoint,
            "--rdzv-id", self.rdzv_id,
        ]  # fmt: skip


def hosts_from_flags(
    nnodes: int | None,
    node_rank: int | None,
    nproc_per_node: int | None,
    endpoint: str | None,
    rdzv_id: str | None,
    default_id: str,
) -> Hosts | None:
    """The hosts of `kernbench run`'s flags, or None for a one-host run; a flag that does
    not fit the others is a one-line error."""
    given = {"--node-rank": node_rank, "--nproc-per-node": nproc_per_node,
             "--rdzv-endpoint": endpoint, "--rdzv-id": rdzv_id}
    if nnodes is None or nnodes == 1:
        stray = [flag for flag, value in given.items() if value is not None]
        if nnodes is None and stray:
            raise UserError(f"{stray[0]}: only with --nnodes N (a run over N hosts)")
        if nnodes == 1 and endpoint is not None:
            raise UserError("--rdzv-endpoint: one host (--nnodes 1) needs no rendezvous")
        return None
    if nnodes < 1:
        raise UserError(f"--nnodes: {nnodes} is not at least 1")
    if node_rank is None:
        raise UserError(f"--node-rank: give this host's number, 0 to {nnodes - 1}")
    if not 0 <= node_rank < nnodes:
        raise UserError(f"--node-rank: {node_rank} is not in 0..{nnodes - 1} (--nnodes {nnodes})")
    if endpoint is None:
        raise UserError("--rdzv-endpoint: give HOST:PORT of node 0 (the same on every host)")
    if nproc_per_node is None or nproc_per_node < 1:
        raise UserError("--nproc-per-node: give the ranks each host starts, 1 or more")
    match = _ENDPOINT.match(endpoint)
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise UserError(f"--rdzv-endpoint: {endpoint!r} is not HOST:PORT (a port 1..65535)")
    if rdzv_id is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", rdzv_id):
        raise UserError(f"--rdzv-id: {rdzv_id!r}: use 1 to 64 letters, digits, '_', '.', '-'")
    return Hosts(nnodes=nnodes, node_rank=node_rank, nproc_per_node=nproc_per_node,
                 endpoint=endpoint, rdzv_id=rdzv_id or default_id)


def default_rdzv_id(bench_name: str, spec_hash: str, endpoint: str | None) -> str:
    """The same on every host started with the same bench and endpoint; hosts that load
    different benches never meet (their rendezvous times out, instead of mixing cells)."""
    digest = hashlib.sha256(f"{spec_hash} {endpoint}".encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", bench_name)[:40]
    return f"{name}-{digest}"


def rendezvous_timeout_s() -> float:
    return seconds_from_env(RENDEZVOUS_TIMEOUT_ENV, DEFAULT_RENDEZVOUS_TIMEOUT_S)


class HostNames(Strict):
    """hosts.json in a multi-host run's folder: each node's hostname, by node rank."""

    schema_version: int = HOST_NAMES_VERSION
    names: list[str | None]  # None: that node never joined


HOST_NAMES: FileFormat[HostNames] = FileFormat("hosts file", HOST_NAMES_VERSION, HostNames)


def save_host_names(folder: Path, names: list[str | None]) -> None:
    """The names the leader heard of, over those of an earlier start (a resume)."""
    known = load_host_names(folder) or []
    merged = [name or (known[i] if i < len(known) else None) for i, name in enumerate(names)]
    HOST_NAMES.write(Path(folder) / HOST_NAMES_NAME, HostNames(names=merged))


def load_host_names(folder: Path) -> list[str | None] | None:
    path = Path(folder) / HOST_NAMES_NAME
    return HOST_NAMES.read(path).names if path.is_file() else None
