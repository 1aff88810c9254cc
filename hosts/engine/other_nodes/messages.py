"""What a node tells the other nodes of its host, and what it hears from them: root config
pushes it kept, what it told its root watchers of its sessions (sessions_elsewhere.py), its
rows for a node that starts; and the nodes whose mirrors it must close as they go.

What it tells goes through the channel layer's group of every node's inbox, one message after
another in the order told (one task sends them), so the others hear a session's row added
before it changed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .. import access
from ..clients import ClientRecord, Clients
from ..fanout import Fanout
from ..placement import Placement, Relay, engine_channel
from ..sessions.session_table import Sessions
from ..terminals.terminal_table import Terminals
from . import sessions_elsewhere
from .feeds import Feeds
from .mirrors import Mirrors, Owner, owned_json, owned_of

log = logging.getLogger("ahpd.nodes")

#: A client whose watched session moved to another node (its node gone) reconnects.
SERVICE_RESTART = 1012
#: What a node tells the others of a client it met (a handshake): it may reconnect to them.
CLIENT = "nodes.client"
#: What a node tells the others as its count of sessions running a turn moves.
ACTIVE = "nodes.active"
#: What a node tells the others: it kept a root config push (they read it back).
ROOT_CONFIG = "nodes.rootConfig"
#: What a node tells the others: the terminals it runs, all of them, with whose each is.
TERMINALS = "nodes.terminals"
#: What a node tells the others: an automation it kept changed, or a run of it moved (the
#: store has it now); each reads it back and says it (automations/catalogue.py).
AUTOMATION = "nodes.automation"
#: What a node tells the others: the agents it runs (their AgentInfo), as they move; root
#: state's `agents` is every node's (Host.agents_info).
AGENTS = "nodes.agents"
#: What a node tells the others: a chat of its moved to a session another node runs (the
#: nodes whose mirror of it it fed judge its later watchers by that session's owner).
CHAT_MOVED = "nodes.chatMoved"
#: Every message another node tells this one (`heard`), as its inbox tells them apart.
HEARD = frozenset(
    (
        ROOT_CONFIG,
        CLIENT,
        ACTIVE,
        AUTOMATION,
        TERMINALS,
        CHAT_MOVED,
        AGENTS,
        sessions_elsewhere.SESSION,
        sessions_elsewhere.HELLO,
        sessions_elsewhere.ROWS,
    )
)


class OtherNodes:
    def __init__(
        self,
        placement: Placement,
        relay: Relay | None,
        sessions: Sessions,
        terminals: Terminals,
        clients: Clients,
        mirrors: Mirrors,
        feeds: Feeds,
        fanout: Fanout,
        root_config_said: Callable[[], Awaitable[None]],
    ) -> None:
        self._placement = placement
        self._relay = relay
        self._sessions = sessions
        self._terminals = terminals
        self._clients = clients
        self._mirrors = mirrors
        self._feeds = feeds
        self._fanout = fanout
        #: Reads back a root config push another node kept (Host.root_config_said_elsewhere).
        self._root_config_said = root_config_said
        self._node_id = placement.node_id
        #: What this node tells the others, in order, and the task that sends it.
        self._to_nodes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._telling: asyncio.Task[None] | None = None
        #: The other nodes whose rows a start waits for (meet).
        self._rows_awaited: dict[str, asyncio.Future[None]] = {}
        #: This node's agents (AgentInfo), for a node that starts, and who hears another
        #: node's (None: that node is gone): the host's (Host.agents_info).
        self.own_agents: Callable[[], list[dict[str, Any]]] = list
        self.agents_said: Callable[[str, list[dict[str, Any]] | None], None] = lambda n, a: None
        #: Who hears what the others tell of a part of the engine this module does not know
        #: (the automations, which import the host): by kind.
        self._listeners: dict[str, Callable[[dict[str, Any]], Awaitable[None]]] = {}
        if self._node_id:
            sessions.on_root_said = self._root_said
            sessions.on_active_count = self._active_counted
            clients.on_met = self._client_met
            terminals.on_announced = self._terminals_said

    def listen(self, kind: str, heard: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Have `heard` told each message of `kind` another node tells this one."""
        self._listeners[kind] = heard

    def tell(self, message: dict[str, Any]) -> None:
        """Tell every other node `message`, after whatever this node told them before it."""
        if self._relay is None or not self._node_id:
            return
        self._to_nodes.put_nowait({**message, "node": self._node_id})
        if self._telling is None:
            self._telling = asyncio.get_running_loop().create_task(self._tell_loop())

    async def _tell_loop(self) -> None:
        relay = self._relay
        assert relay is not None
        while True:
            message = await self._to_nodes.get()
            try:
                await relay.broadcast(message)
            except Exception:
                log.exception("telling the other nodes %s failed", message["type"])

    def _root_said(self, method: str, record: access.Owned, params: dict[str, Any]) -> None:
        owned = Owner(record.uri, record.owner, record.scope)
        self.tell(sessions_elsewhere.told(self._node_id, method, params, owned))

    def _active_counted(self, count: int) -> None:
        self.tell({"type": ACTIVE, "count": count})

    def _terminals_said(self, rows: list[tuple[dict[str, Any], access.Owned]]) -> None:
        self.tell({"type": TERMINALS, "terminals": _terminal_rows(rows)})

    def chat_moved(self, chat: str, whose: access.Owned) -> None:
        """Tell the others a chat of this node's is now in another node's session `whose`."""
        self.tell({"type": CHAT_MOVED, "chat": chat, "whose": owned_json(whose)})

    def _client_met(self, record: ClientRecord) -> None:
        self.tell(
            {
                "type": CLIENT,
                "clientId": record.client_id,
                "version": record.version_text,
                "principal": record.principal,
                "name": record.client_name,
            }
        )

    async def meet(self, timeout_s: float = 5.0) -> None:
        """As this node starts: ask the other live nodes for their sessions' rows, and wait
        (at most `timeout_s`) until each answered, so a client's first listing here lists
        every session of the host."""
        others = await self._placement.others()
        if not others or self._relay is None:
            return
        loop = asyncio.get_running_loop()
        self._rows_awaited = {node: loop.create_future() for node in others}
        self.tell({"type": sessions_elsewhere.HELLO, "agents": self.own_agents()})
        try:
            await asyncio.wait_for(asyncio.gather(*self._rows_awaited.values()), timeout_s)
        except TimeoutError:
            silent = sorted(n for n, f in self._rows_awaited.items() if not f.done())
            log.warning("nodes %s did not say their sessions within %g s", silent, timeout_s)
        self._rows_awaited = {}

    async def heard(self, message: dict[str, Any]) -> None:
        """What another node of the host told this one (through the nodes' group, or to this
        node alone)."""
        node, kind = str(message.get("node")), message.get("type")
        if node == self._node_id:
            return
        if kind == ROOT_CONFIG:
            await self._root_config_said()
        elif kind == sessions_elsewhere.SESSION:
            owned = sessions_elsewhere.owner_of(message["owned"])
            self._sessions.said_elsewhere(node, message["method"], message["params"], owned)
            if message["method"] == "root/sessionRemoved":
                self._mirrors.session_gone(owned.uri)
        elif kind == sessions_elsewhere.HELLO and self._relay is not None:
            self.agents_said(node, list(message.get("agents") or []))
            rows = self._sessions.own_rows()
            await self._relay.send(
                engine_channel(node),
                {
                    "type": sessions_elsewhere.ROWS,
                    "node": self._node_id,
                    "rows": rows,
                    "active": self._sessions.active_here,
                    "terminals": _terminal_rows(self._terminals.own_rows()),
                    "agents": self.own_agents(),
                },
            )
        elif kind == AGENTS:
            self.agents_said(node, list(message["agents"]))
        elif kind == CHAT_MOVED:
            self._mirrors.moved(str(message["chat"]), owned_of(message["whose"]))
        elif kind == ACTIVE:
            self._sessions.active_said_elsewhere(node, int(message["count"]))
        elif kind == CLIENT:
            self._clients.met_elsewhere(
                node,
                str(message["clientId"]),
                str(message["version"]),
                str(message["principal"]),
                message.get("name"),
            )
        elif (listener := self._listeners.get(str(kind))) is not None:
            await listener(message)
        elif kind == TERMINALS:
            self._terminals.said_elsewhere(node, _terminals_of(message["terminals"]))
        elif kind == sessions_elsewhere.ROWS:
            self._sessions.rows_elsewhere(node, message["rows"])
            self._sessions.active_said_elsewhere(node, int(message.get("active") or 0))
            self._terminals.said_elsewhere(node, _terminals_of(message.get("terminals") or []))
            self.agents_said(node, list(message.get("agents") or []))
            waited = self._rows_awaited.get(node)
            if waited is not None and not waited.done():
                waited.set_result(None)

    async def check_feeders(self, live: set[str]) -> None:
        """Close the mirrors fed by nodes that are gone (killed, their lease lapsed; `live` are
        those there), stop feeding those, and count their turns no more: told at each renewal
        of this node's lease."""
        for node in self._mirrors.nodes() - live:
            await self.feeder_lost(node)
        self._feeds.keep_only({engine_channel(node) for node in live})
        for node in set(self._sessions.active_elsewhere) - live:
            # Its turns ended with it (each is ended as interrupted where it is taken over).
            self._sessions.active_said_elsewhere(node, None)
        for node in self._terminals.nodes_elsewhere() - live:
            # Its terminals' processes ended with it.
            self._terminals.said_elsewhere(node, None)

    async def feeder_lost(self, node: str) -> None:
        """A node stopped feeding this one: the clients that watched its channels here are
        closed (1012, service restart), and reconnect to what runs the sessions now."""
        for conn in self._mirrors.lost(node):
            if conn.closed:
                continue
            self._fanout.disconnect(conn)
            await conn.transport.close(
                SERVICE_RESTART, f"node {node}, which ran a session watched here, is gone"
            )


def _terminal_rows(rows: list[tuple[dict[str, Any], access.Owned]]) -> list[dict[str, Any]]:
    return [{"info": info, "whose": owned_json(whose)} for info, whose in rows]


def _terminals_of(data: list[dict[str, Any]]) -> list[tuple[dict[str, Any], access.Owned]]:
    return [(dict(row["info"]), owned_of(row["whose"])) for row in data]
