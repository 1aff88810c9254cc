"""The channels this node runs, fed to the other nodes whose clients watch them.

Each node that watches any of this node's channels is one connection here, subscribed to those
channels like any client, with every grant and the newest protocol version: the fan-out
sequences, reduces and rings each action once, as for its own clients, and hands the frames of
a pass to that connection's transport, which sends them to the watching node's inbox over the
channel layer in one message, in order (layer_transport.py). A node that falls too far behind
is dropped as a slow client is, and told its mirrors are lost.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

from ...protocol.versions import parse_version
from ..channel import Channel
from ..connection import Connection
from ..fanout import Fanout
from ..placement import Relay
from ..principal import Principal
from .layer_transport import LayerTransport

log = logging.getLogger("ahpd.nodes")

#: The kinds of channel another node mirrors: a session's, its chats', its changesets', its
#: annotations', and a terminal's (its pty is this node's; its output and its state are fed).
FED_KINDS = ("session", "chat", "changeset", "annotations", "terminal")
#: What the inbox of a watching node is told.
FRAMES = "mirror.frames"
LOST = "mirror.lost"


class Feeds:
    """This node's channels, fed to the nodes that mirror them (one connection per node)."""

    def __init__(self, fanout: Fanout, relay: Relay | None, node_id: str) -> None:
        self._fanout = fanout
        self._relay = relay
        self._node_id = node_id
        self._by_inbox: dict[str, Connection] = {}
        #: The opening of each mirror fed, by (inbox, uri): a stop names the one it ends.
        self._tokens: dict[tuple[str, str], str] = {}

    def feed(self, channel: Channel, inbox: str, token: str) -> dict[str, Any]:
        """Feed `channel` to the node reading `inbox` from now on: its whole state as of the
        serverSeq returned, every later action sent after it."""
        assert self._relay is not None, "a node feeds others over its relay"
        conn = self._by_inbox.get(inbox)
        if conn is None or conn.closed:
            node = self._node_id
            transport = LayerTransport(
                self._relay,
                inbox,
                lambda frames: {"type": FRAMES, "node": node, "frames": frames},
                lambda code, reason: {"type": LOST, "node": node},
            )
            conn = self._fanout.connect(transport, f"node inbox {inbox}")
            transport.on_failed = lambda: self.drop(inbox)
            conn.principal = conn.admitted_principal = Principal(f"node:{inbox}", ("*:*",))
            # Named, so that what hears a channel's watchers leave (a changeset's file watcher,
            # let go once nobody watches) hears this node's mirror go too.
            conn.client_id = f"node-feed:{inbox}"
            conn.version_text, conn.version = "999.0.0", parse_version("999.0.0")
            self._by_inbox[inbox] = conn
        self._fanout.subscribe(conn, channel)
        self._tokens[(inbox, channel.uri)] = token
        # A copy, as it is now: what is sent after it is every action from fromSeq on.
        state = orjson.loads(orjson.dumps(channel.state))
        return {"kind": channel.kind, "state": state, "fromSeq": self._fanout.server_seq}

    def stop(self, uri: str, inbox: str, token: str) -> None:
        """Stop feeding `uri` to `inbox`, where the mirror `token` names is the one fed."""
        conn = self._by_inbox.get(inbox)
        channel = self._fanout.channel(uri)
        if self._tokens.get((inbox, uri)) != token:
            return
        del self._tokens[(inbox, uri)]
        if conn is not None and channel is not None:
            self._fanout.unsubscribe(conn, channel)

    def unfeed(self, uri: str, inbox: str) -> None:
        """Stop feeding `uri` to `inbox`, whichever mirror of it it fed: that node runs it now
        (a chat moved to one of its sessions)."""
        self._tokens.pop((inbox, uri), None)
        conn = self._by_inbox.get(inbox)
        channel = self._fanout.channel(uri)
        if conn is not None and channel is not None:
            self._fanout.unsubscribe(conn, channel)

    def inbox_of(self, conn: Connection) -> str | None:
        """The inbox of the node a connection feeds, where it is one of the feeds."""
        return next((inbox for inbox, fed in self._by_inbox.items() if fed is conn), None)

    def drop(self, inbox: str) -> None:
        """Stop feeding the node reading `inbox` anything (it is gone, or a send to it
        failed): told its mirrors are lost, where it is there to hear it."""
        conn = self._by_inbox.pop(inbox, None)
        if conn is None:
            return
        for key in [key for key in self._tokens if key[0] == inbox]:
            del self._tokens[key]
        if not conn.closed:
            self._fanout.disconnect(conn)
            asyncio.get_running_loop().create_task(conn.transport.abort())

    def keep_only(self, inboxes: set[str]) -> None:
        """Stop feeding every node but those reading `inboxes` (the live ones)."""
        for inbox in [inbox for inbox in self._by_inbox if inbox not in inboxes]:
            log.warning("node reading %s is gone: no longer fed", inbox)
            self.drop(inbox)

    def feeding(self) -> bool:
        """Whether any node is fed a channel of this one."""
        return any(not conn.closed for conn in self._by_inbox.values())
