"""This `serve` process as a node of its host: its row claimed as it starts, renewed every
third of the lease on the server's loop, and let go as it stops (hosts/store/nodes.py).

A start whose node id another live process holds waits for that lease to lapse (one lease:
a node killed and started again on a machine that reused its pid) and is then refused in
words naming the holder. A renewal that finds the lease lapsed (this process stalled past it)
claims the row again, and then lets go the sessions another node took meanwhile (on_lapsed);
one that finds the row another start's is logged and claimed again once that lease lapses.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta

from django.conf import settings

from ..store.engine_database import db_call
from ..store.nodes import NodeFacts, NodeHeld, claim, release, renew
from ..store.session_nodes import others
from .control import WILDCARDS, pid_space

log = logging.getLogger("ahpd.nodes")


async def _nothing() -> None:
    return None


#: How often a start whose id is held tries again while it waits for the lease to lapse.
RETRY_SECONDS = 1.0

_claim = db_call(claim)
_renew = db_call(renew)
_release = db_call(release)
_others = db_call(others)


def node_address(bound_host: str, bound_port: int) -> str:
    """Where this node listens, as another machine reaches it: the bound address, or the
    machine's name where it listens on every address (AHPD_PUBLIC_URL is the host's, which
    every node behind one proxy shares, so it names none of them)."""
    host = socket.gethostname() if bound_host in WILDCARDS else bound_host
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"ws://{shown}:{bound_port}/"


class NodeLease:
    """This process's claim on its node row, from start to stop."""

    def __init__(self, version: str, agents: tuple[str, ...] = ()) -> None:
        self.lease = timedelta(seconds=settings.AHPD_NODE_LEASE_SECONDS)
        self.facts = NodeFacts(
            node_id=settings.AHPD_NODE_ID,
            instance=secrets.token_hex(16),
            machine=socket.gethostname(),
            pid=os.getpid(),
            pid_space=pid_space(),
            address="",
            folders=tuple(str(path) for path in settings.AHPD_PATHS),
            agents_max=settings.AHPD_NODE_AGENTS,
            version=version,
            agents=agents,
        )
        self._task: asyncio.Task[None] | None = None
        #: Called once a renewal found the lease lapsed and the row was claimed again.
        self.on_lapsed: Callable[[], Awaitable[None]] = _nothing
        #: Called after every renewal: this node's look at whether the others are there.
        self.on_renewed: Callable[[], Awaitable[None]] = _nothing

    async def claim(self) -> None:
        """Claim the row, waiting out one lease for a holder to lapse; NodeHeld after that."""
        deadline = time.monotonic() + self.lease.total_seconds() + RETRY_SECONDS
        said = False
        while True:
            try:
                await _claim(self.facts, self.lease)
                return
            except NodeHeld as held:
                if time.monotonic() >= deadline:
                    raise
                if not said:
                    log.warning("%s; waiting for its lease to lapse", held)
                    said = True
            await asyncio.sleep(RETRY_SECONDS)

    async def others(self) -> list[str]:
        """The other live nodes of the host, by id."""
        return await _others(self.facts.node_id, self.facts.machine)

    async def serve(self, bound_host: str, bound_port: int) -> None:
        """Tell the others where this node listens (renewed now), and renew the claim from now
        on, every third of the lease."""
        self.facts = replace(self.facts, address=node_address(bound_host, bound_port))
        await self._renew_once()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._keep(), name="ahpd-node-lease"
            )

    async def _keep(self) -> None:
        period = self.lease.total_seconds() / 3
        while True:
            await asyncio.sleep(period)
            await self._renew_once()

    async def _renew_once(self) -> None:
        try:
            if not await _renew(self.facts, self.lease):
                log.error(
                    "node %s: its lease lapsed before it was renewed (another node may have "
                    "taken its sessions meanwhile); claiming it again",
                    self.facts.node_id,
                )
                await _claim(self.facts, self.lease)
                # Live again: whatever another node took meanwhile is its now.
                await self.on_lapsed()
            await self.on_renewed()
        except asyncio.CancelledError:
            raise
        except NodeHeld as held:
            log.error("%s", held)
        except Exception:
            log.exception("node %s: renewing its lease failed", self.facts.node_id)

    async def stop(self) -> None:
        """Stop renewing and let the row go: the node leaves every list at once."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        try:
            await _release(self.facts)
        except Exception:
            log.exception("node %s: letting its row go failed", self.facts.node_id)
