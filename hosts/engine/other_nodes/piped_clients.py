"""Clients piped to the node they spoke to: a client that reconnects to this node while the
node that met it last (its handshake there) is live is not resumed here, where that node's
serverSeq means nothing. Its socket's frames are carried to that node, its home, and the frames
the home sends it carried back, in order, over the channel layer: one pipe per socket. The
home holds the client's connection as if the socket were its own (its serverSeq, its replay
ring, its subscriptions, its grants read again from the store), so a reconnect to any node of
the host is answered as the node the client spoke to answers it: replayed after AHP 1.0's one
watermark or after 1.1's per-channel cursors, or sent snapshots where its ring no longer
covers them. Every later frame is answered there too.

A pipe ends with its socket (the home is told, and holds the client as one gone), with the
home's close of the connection (its close code carried to the socket, after every frame owed),
or with the home gone (the socket closed 1012, service restart: the client reconnects, to a
node that is there, which then resumes it itself, with snapshots).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..clients import Clients
from ..connection import Connection
from ..fanout import Fanout
from ..placement import Placement, Relay, engine_channel
from ..principal import Principal
from .layer_transport import LayerTransport
from .messages import SERVICE_RESTART

log = logging.getLogger("ahpd.nodes")

#: The node a socket is on tells the home: a frame the client sent.
IN = "pipe.in"
#: ... and that the socket closed.
CLOSE = "pipe.close"
#: The home tells the node the socket is on: frames for the client.
OUT = "pipe.out"
#: ... and that it closed the connection (its code, or None: dropped).
CLOSED = "pipe.closed"
#: What a node's inbox hands to `heard`.
KINDS = frozenset((IN, CLOSE, OUT, CLOSED))
#: The service a pipe is opened by (a call, answered once the home holds the connection).
OPEN_SERVICE = "open_pipe"
#: How long a home has to say it holds the connection before the socket is resumed here.
OPEN_TIMEOUT_S = 5.0


@dataclass(slots=True)
class FarEnd:
    """A socket on this node, piped to its home."""

    pipe: str
    conn: Connection
    home: str


@dataclass(slots=True)
class HomeEnd:
    """A connection this node holds for a socket on another node."""

    conn: Connection
    #: The frames the socket sent, taken one at a time, in order (None: it closed).
    frames: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None


class PipedClients:
    def __init__(
        self,
        fanout: Fanout,
        relay: Relay | None,
        placement: Placement,
        clients: Clients,
        disconnect: Callable[[Connection], None],
    ) -> None:
        self._fanout = fanout
        self._relay = relay
        self._placement = placement
        self._clients = clients
        #: How a connection whose socket is gone is let go (Host.disconnect).
        self._disconnect = disconnect
        self._inbox = engine_channel(placement.node_id)
        #: How a frame of a piped client is taken at its home (the router's receive); set by
        #: whoever makes the router.
        self.receive: Callable[[Connection, str], Awaitable[None]] | None = None
        self._far: dict[str, FarEnd] = {}
        self._far_by_conn: dict[Connection, FarEnd] = {}
        self._home: dict[str, HomeEnd] = {}

    # -- the node the socket is on --------------------------------------------------------

    def piped(self, conn: Connection) -> bool:
        return conn in self._far_by_conn

    async def home_of(self, conn: Connection, params: dict[str, Any]) -> str | None:
        """The live node a reconnect is piped to: the other node that met the client last,
        where the client is the connection's principal's own and that node is there."""
        if not self._placement.node_id or self._relay is None:
            return None
        client_id = params.get("clientId")
        if not isinstance(client_id, str):
            return None  # refused here, in the reconnect's own words
        record = self._clients.held_by(client_id, conn.principal.ref)
        if record is None or not record.met_by:
            return None
        if record.met_by not in await self._placement.others():
            return None
        return record.met_by

    async def open(self, conn: Connection, home: str, text: str) -> bool:
        """Pipe the socket to `home`, the reconnect `text` its first frame; False where the
        home did not take it in time (the reconnect is then answered here)."""
        assert self._relay is not None
        far = FarEnd(secrets.token_hex(16), conn, home)
        self._far[far.pipe] = far
        self._far_by_conn[conn] = far
        try:
            await asyncio.wait_for(
                self._relay.call(
                    engine_channel(home),
                    OPEN_SERVICE,
                    conn.principal,
                    {"pipe": far.pipe, "inbox": self._inbox, "peer": conn.peer, "text": text},
                ),
                OPEN_TIMEOUT_S,
            )
        except Exception as exc:
            log.warning("piping %r to node %s failed (%s): resumed here", conn, home, exc)
            self._far.pop(far.pipe, None)
            self._far_by_conn.pop(conn, None)
            return False
        return True

    async def forward(self, conn: Connection, text: str) -> None:
        """A frame the piped socket sent, carried to its home."""
        far = self._far_by_conn[conn]
        assert self._relay is not None
        try:
            await self._relay.send(
                engine_channel(far.home), {"type": IN, "pipe": far.pipe, "text": text}
            )
        except Exception:
            log.exception("carrying a frame of %r to node %s failed: closed", conn, far.home)
            await self._end_far(far, SERVICE_RESTART, f"node {far.home} could not be reached")

    def gone(self, conn: Connection) -> None:
        """A piped socket closed: its home is told, and holds the client as one gone."""
        far = self._far_by_conn.get(conn)
        if far is not None:
            self._let_go(far, tell_home=True)

    def homes(self) -> set[str]:
        return {far.home for far in self._far.values()}

    async def homes_gone(self, live: set[str]) -> None:
        """The sockets piped to a node no longer live are closed, to reconnect."""
        for far in [far for far in self._far.values() if far.home not in live]:
            self._let_go(far, tell_home=False)
            await self._fanout.close_one(
                far.conn, SERVICE_RESTART, f"node {far.home}, which held it, is gone"
            )

    async def _end_far(self, far: FarEnd, code: int | None, reason: str) -> None:
        """Close a piped socket (code None: drop it); its home lets the connection go."""
        self._let_go(far, tell_home=True)
        if code is None:
            self._fanout.disconnect(far.conn)
            await far.conn.transport.abort()
        else:
            await self._fanout.close_one(far.conn, code, reason)

    def _let_go(self, far: FarEnd, *, tell_home: bool) -> None:
        if self._far.pop(far.pipe, None) is None:
            return
        self._far_by_conn.pop(far.conn, None)
        if not tell_home or self._relay is None:
            return
        relay, message = self._relay, {"type": CLOSE, "pipe": far.pipe}

        async def tell() -> None:
            try:
                await relay.send(engine_channel(far.home), message)
            except Exception:
                log.exception("telling node %s a piped socket closed failed", far.home)

        asyncio.get_running_loop().create_task(tell())

    # -- the home -------------------------------------------------------------------------

    def take(self, principal: Principal, pipe: str, inbox: str, peer: str, text: str) -> None:
        """Hold a connection for a socket on the node reading `inbox`, signed in there as
        `principal`; its first frame `text` (its reconnect) taken as every later one is."""
        assert self._relay is not None
        transport = LayerTransport(
            self._relay,
            inbox,
            lambda frames: {"type": OUT, "pipe": pipe, "frames": frames, "home": self._inbox},
            lambda code, reason: {"type": CLOSED, "pipe": pipe, "code": code, "reason": reason},
        )
        conn = self._fanout.connect(transport, f"{peer} (piped from {inbox})")
        conn.principal = conn.admitted_principal = principal
        home = self._home[pipe] = HomeEnd(conn)
        transport.on_failed = lambda: self._end_home(pipe)
        home.frames.put_nowait(text)
        home.task = asyncio.get_running_loop().create_task(self._serve(home), name=f"pipe {pipe}")

    async def _serve(self, home: HomeEnd) -> None:
        receive = self.receive
        assert receive is not None, "a node taking pipes has a router"
        while (text := await home.frames.get()) is not None:
            if home.conn.closed:
                continue  # dropped here (too slow): what it still sends is nobody's
            try:
                await receive(home.conn, text)
            except Exception:
                log.exception("a frame of piped %r failed", home.conn)

    def _end_home(self, pipe: str) -> None:
        """The socket closed (or could no longer be sent to): the connection let go, as a
        socket's is when it closes, and its transport stopped."""
        home = self._home.pop(pipe, None)
        if home is None:
            return
        home.frames.put_nowait(None)
        self._disconnect(home.conn)
        asyncio.get_running_loop().create_task(home.conn.transport.abort())

    # -- both -----------------------------------------------------------------------------

    async def heard(self, message: dict[str, Any]) -> None:
        """What the other end of a pipe sent, in the order it sent it."""
        kind, pipe = message.get("type"), str(message.get("pipe"))
        if kind == IN:
            home = self._home.get(pipe)
            if home is not None:
                home.frames.put_nowait(str(message["text"]))
        elif kind == CLOSE:
            self._end_home(pipe)
        elif kind == OUT:
            far = self._far.get(pipe)
            if far is None:
                # The socket is gone (or was resumed here, the home too slow to take it):
                # its home lets the connection go.
                if self._relay is not None and isinstance(message.get("home"), str):
                    await self._relay.send(message["home"], {"type": CLOSE, "pipe": pipe})
                return
            for frame in message["frames"]:
                self._fanout.send(far.conn, frame)
        elif kind == CLOSED:
            far = self._far.get(pipe)
            if far is not None:
                code = message.get("code")
                reason = str(message.get("reason") or "")
                await self._end_far(far, int(code) if code is not None else None, reason)
