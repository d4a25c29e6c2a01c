"""The leader's word to the other hosts of a multi-host run, through the rendezvous store.

Node 0's runner hosts a TCPStore on the endpoint's port for the whole run: the elastic
agents of every worker meet there (as clients), and so do the runners. Before each
worker it starts, the leader posts an order (the round, the cells, the spawn number
that names the rendezvous); each follower starts its share of the ranks for it, and
stops them once the leader's worker has ended. A last order says the run is over.
Followers thus never decide what to run: a resume, a retry after a death, a timeout are
the leader's alone, and every host counts spawns alike.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from kernbench.errors import EXIT_FAILED, UserError
from kernbench.execute.hosts import Hosts
from kernbench.spec.fields import Strict

POLL_S = 0.1
# How long the leader, done, waits for the followers to read that it is done: longer
# than a follower may take to stop its last ranks (follow.STRAGGLER_S).
FAREWELL_S = 15.0


class Order(Strict):
    """One worker of the leader's, for the followers to join; or, `done`, the end."""

    spec_hash: str  # the leader's bench: a follower with another bench refuses to join
    device: str
    round: int = 0
    world_size: int = 0
    cells: list[int] = []
    done: bool = False
    reason: str | None = None  # why the run ended early (hosts lost), when done


class LeaderGone(Exception):
    """The store went away: the leader's runner ended or its host died."""


class HostChannel:
    def __init__(self, hosts: Hosts, store: Any) -> None:
        self.hosts = hosts
        self.store = store
        self.prefix = f"kernbench/{hosts.rdzv_id}"

    @classmethod
    def open(cls, hosts: Hosts, timeout_s: float) -> HostChannel:
        """The leader's store (listening on the endpoint's port), or a follower's
        connection to it, waiting up to `timeout_s` for the leader to start."""
        import torch.distributed as dist  # lazy: torch only for runs over several hosts

        host, port = hosts.host_port
        try:
            store = dist.TCPStore(host, port, is_master=hosts.leads, multi_tenant=hosts.leads,
                                  wait_for_workers=False, timeout=timedelta(seconds=timeout_s))
        except Exception as exc:  # noqa: BLE001 - torch raises several kinds; one line each
            text = " ".join(str(exc).split())[:200]
            if hosts.leads:
                raise UserError(f"--rdzv-endpoint: cannot listen on port {port}: {text}") from None
            raise UserError(f"node {hosts.node_rank}: no leader (node 0) at {hosts.endpoint} "
                            f"within {timeout_s:g} s: {text}", EXIT_FAILED) from None
        return cls(hosts, store)

    def _key(self, *parts: object) -> str:
        return "/".join([self.prefix, *map(str, parts)])

    # --- the leader ---

    def post(self, spawn: int, order: Order) -> None:
        self.store.set(self._key("order", spawn), order.model_dump_json())

    def ended(self, spawn: int) -> None:
        self.store.set(self._key("ended", spawn), "1")

    def finish(self, spawn: int, order: Order) -> None:
        """The last order; then a short wait for each follower to have read it, for the
        store goes when the leader's process does."""
        self.post(spawn, order)
        joined = [rank for rank, name in enumerate(self.host_names()) if rank and name]
        keys = [self._key("bye", rank) for rank in joined]
        # Hosts lost: those still there have no worker to stop first, and most are gone.
        deadline = time.monotonic() + (FAREWELL_S if order.reason is None else POLL_S * 20)
        while time.monotonic() < deadline and not self.store.check(keys):
            time.sleep(POLL_S)

    def host_names(self) -> list[str | None]:
        """Each node's hostname, as it said when it joined (None: it never did)."""
        names: list[str | None] = []
        for rank in range(self.hosts.nnodes):
            key = self._key("host", rank)
            names.append(self.store.get(key).decode() if self.store.check([key]) else None)
        return names

    # --- every host ---

    def introduce(self, hostname: str) -> None:
        self.store.set(self._key("host", self.hosts.node_rank), hostname)

    # --- a follower ---

    def wait_order(self, spawn: int) -> Order:
        key = self._key("order", spawn)
        while not self._check(key):
            time.sleep(POLL_S)
        order = Order.model_validate_json(self._call(self.store.get, key))
        if order.done:
            self._call(self.store.set, self._key("bye", self.hosts.node_rank), "1")
        return order

    def has_ended(self, spawn: int) -> bool:
        return self._check(self._key("ended", spawn))

    def _check(self, key: str) -> bool:
        return bool(self._call(self.store.check, [key]))

    @staticmethod
    def _call(method: Any, *args: Any) -> Any:
        try:
            return method(*args)
        except Exception as exc:  # noqa: BLE001 - a store that is gone raises several kinds
            raise LeaderGone(" ".join(str(exc).split())[:200] or type(exc).__name__) from exc
