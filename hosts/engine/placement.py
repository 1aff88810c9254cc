"""Which node runs a session, where several `serve` processes share one database: the seam
between the engine and the other nodes of its host.

One process alone (the embedded default, a test's engine) runs every session (`HereOnly`). A
node (`NodePlacement`) runs the sessions the database says are its own, takes one that no
live node runs at its first use (a node gone: killed, its machine lost), and names the live
node that runs any other, to which a service call is carried by the host's `Relay` over the
channel layer (hosts/edge/relay.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .principal import Principal


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """The live node that runs a session: its id, its engine's channel, where it listens."""

    node_id: str
    channel: str
    address: str


@dataclass(frozen=True, slots=True)
class Found:
    """What a URI this engine holds nothing of names: the session it is in (None: none kept),
    and the node that runs it, where that is another (None: this one, which runs it now)."""

    session: str | None
    elsewhere: Elsewhere | None = None


class Placement(Protocol):
    #: This engine's node id ("" for one process alone).
    node_id: str

    async def find(self, uri: str) -> Found:
        """The session a URI this engine holds nothing of is in, taken here if no live node
        runs it."""
        ...

    async def place_new(self, folder: Path | None, provider: object) -> Elsewhere | None:
        """The node a new session of agent `provider` working in `folder` (its first, as
        asked: a provider that is no string names none) is made on; None for this one."""
        ...

    async def held(self) -> set[str]:
        """The sessions the database says this node runs."""
        ...

    async def others(self) -> list[str]:
        """The other live nodes of the host, by id."""
        ...


class Relay(Protocol):
    async def call(
        self, engine: str, service: str, principal: Principal, args: dict[str, Any]
    ) -> Any:
        """Run a service by name on another engine, as `principal`, and return its answer."""
        ...

    async def send(self, inbox: str, message: dict[str, Any]) -> None:
        """Send a message to a node's inbox, answered by nothing (other_nodes/feeds.py)."""
        ...

    async def broadcast(self, message: dict[str, Any]) -> None:
        """Send a message to every node's inbox (this one's too, which knows it by its
        `node`)."""
        ...

    async def dispatch(
        self, engine: str, principal: Principal, client: dict[str, Any], params: dict[str, Any]
    ) -> None:
        """Carry a client's dispatchAction to the engine that runs its channel, to be applied
        there after every one carried before it (other_nodes/remote_clients.py)."""
        ...


class SessionNodes(Protocol):
    """The database's word on which node runs each session (hosts/store/session_nodes.py)."""

    async def session_of(self, uri: str) -> str | None: ...

    async def take(self, session: str) -> tuple[str, str] | None:
        """Take the session for this node where no live node runs it (None); else the
        (id, address) of the live node that does."""
        ...

    async def place(self, folder: str | None, provider: str | None) -> tuple[str, str]:
        """The (id, address) of the node a new session of `provider` in `folder` goes to."""
        ...

    async def held(self) -> list[str]: ...

    async def others(self) -> list[str]: ...


#: The channel-layer group of every node's inbox.
NODES_GROUP = "ahpd.nodes"


def engine_channel(node_id: str) -> str:
    """The channel-layer channel a node's engine reads its calls on (letters, digits, `-`,
    `_` and `.` alone, as Channels names must be)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in node_id)
    return f"ahpd.engine.{safe}"


class HereOnly:
    """Every session is this engine's."""

    node_id = ""

    async def find(self, uri: str) -> Found:
        return Found(None)

    async def place_new(self, folder: Path | None, provider: object) -> Elsewhere | None:
        return None

    async def held(self) -> set[str]:
        raise NotImplementedError("one process alone runs every session it keeps")

    async def others(self) -> list[str]:
        return []


class NodePlacement:
    """A node of a host of several: the database says which node runs what."""

    def __init__(self, node_id: str, nodes: SessionNodes) -> None:
        self.node_id = node_id
        self._nodes = nodes

    async def find(self, uri: str) -> Found:
        session = await self._nodes.session_of(uri)
        if session is None:
            return Found(None)
        holder = await self._nodes.take(session)
        if holder is None:
            return Found(session)
        return Found(session, self._elsewhere(*holder))

    async def place_new(self, folder: Path | None, provider: object) -> Elsewhere | None:
        agent = provider if isinstance(provider, str) else None
        if folder is None and agent is None:
            return None
        node_id, address = await self._nodes.place(None if folder is None else str(folder), agent)
        return None if node_id == self.node_id else self._elsewhere(node_id, address)

    async def held(self) -> set[str]:
        return set(await self._nodes.held())

    async def others(self) -> list[str]:
        return await self._nodes.others()

    @staticmethod
    def _elsewhere(node_id: str, address: str) -> Elsewhere:
        return Elsewhere(node_id, engine_channel(node_id), address)
