"""The Channels consumer: a WebSocket in front of one engine connection, and nothing else."""

from __future__ import annotations

import logging
from typing import Any

from channels.consumer import AsyncConsumer
from channels.exceptions import StopConsumer

from ..engine.connection import Connection
from ..engine.router import Router
from ..protocol import jsonrpc
from ..protocol.errors import ErrorCode, ProtocolError
from . import connection_token, wire_capture
from .daphne_wire import FRAMES, DaphneWire
from .runtime import get_router

log = logging.getLogger("ahpd.socket")

BINARY_REFUSAL = jsonrpc.error_frame(
    None,
    ProtocolError(
        ErrorCode.INVALID_REQUEST,
        "Invalid request: a binary frame; AHP is one JSON-RPC message per text frame",
    ),
)


class AhpConsumer(AsyncConsumer):
    # No channel layer per socket: within the process the engine writes to sockets directly,
    # and a layer channel per connection would be a Redis reader per client.
    channel_layer_alias = "ahpd-no-layer"

    connection: Connection | None = None
    router: Router | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # Replaces AsyncConsumer.__call__, whose loop makes a task and an asyncio.wait for every
        # frame (channels' await_many_dispatch, for a consumer reading a layer too); this one
        # reads only its socket, one frame at a time, in order.
        self.scope = scope
        self.base_send = send
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass
        finally:
            # However the consumer ends (daphne cancels one still busy after its client went),
            # the engine lets go of the connection.
            self._let_go()

    def _let_go(self) -> None:
        if self.connection is not None and self.router is not None:
            self.router.host.disconnect(self.connection)
        if isinstance(transport := getattr(self.connection, "transport", None), _SocketTransport):
            transport.forget_unsent()
        self.connection = None

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Replaces AsyncConsumer.dispatch, which runs close_old_connections in a thread before
        # every frame; nothing on this path touches the ORM.
        kind = message["type"]
        if kind == "websocket.receive":
            await self._receive(message)
        elif kind == "websocket.connect":
            await self._connect()
        elif kind == "websocket.disconnect":
            await self._disconnect()

    async def _connect(self) -> None:
        if self.scope.get("path", "/") not in ("", "/"):
            await self.send({"type": "websocket.close"})
            return
        headers = {k.decode("latin1").lower(): v.decode("latin1") for k, v in self.scope["headers"]}
        if connection_token.upgrade_refusal(headers) is not None:
            # Refused 403 at the upgrade by the server in front; plain daphne says 403 too.
            await self.send({"type": "websocket.close"})
            return
        token = connection_token.token_from(self.scope.get("query_string", b""), headers)
        self.router = router = await get_router()
        host = router.host
        if host.stopping:
            await self.send({"type": "websocket.close"})
            return
        # The deployment's token is the deployment (root); a person's token signs the
        # connection in as that person, which is how VS Code (?tkn= only) connects as one.
        principal = None
        if not connection_token.admits(token):
            principal = await host.directory.principal_for_token(token) if token else None
            if principal is None:
                # The server in front refused this at the upgrade with 401; plain daphne
                # (no such check in front) can only say 403.
                await self.send({"type": "websocket.close"})
                return
        client = self.scope.get("client") or ("?", 0)
        peer = f"{client[0]}:{client[1]}"
        self.connection = host.connect(_SocketTransport(self, peer), peer, principal)
        await self.send({"type": "websocket.accept"})

    async def _receive(self, message: dict[str, Any]) -> None:
        if self.connection is None:
            return
        text = message.get("text")
        if text is None:
            # Refused, not fatal: the socket stays up and nobody else notices.
            assert self.router is not None
            self.router.host.fanout.send(self.connection, BINARY_REFUSAL)
            return
        assert self.router is not None
        if (capture := wire_capture.capture) is not None:
            capture.record(wire_capture.C2S, text, self.connection.peer)
        await self.router.receive(self.connection, text)

    async def _disconnect(self) -> None:
        self._let_go()
        raise StopConsumer()


class _SocketTransport:
    """The engine's Transport over this consumer's socket.

    Under daphne, frames go straight to the socket (see daphne_wire.py); under any other
    ASGI server, through the consumer's send.
    """

    __slots__ = ("_consumer", "_peer", "_protocol", "_wire")

    def __init__(self, consumer: AhpConsumer, peer: str) -> None:
        self._consumer = consumer
        self._peer = peer
        # daphne's send is a partial over its protocol; nothing else is.
        self._protocol = next(iter(getattr(consumer.base_send, "args", ())), None)
        wire = DaphneWire(self._protocol)
        self._wire = wire if wire.usable else None

    def write_now(self, texts: list[str]) -> bool:
        wire = self._wire
        if wire is None:
            return False
        if (capture := wire_capture.capture) is not None and wire.open:
            # Written down before it is sent: a client never reads a frame the capture
            # does not hold yet.
            for text in texts:
                capture.record(wire_capture.S2C, text, self._peer)
        frame = FRAMES.frame
        return wire.write(
            frame(texts[0]) if len(texts) == 1 else b"".join([frame(t) for t in texts])
        )

    async def send_batch(self, texts: list[str]) -> None:
        if self.write_now(texts):
            return
        for text in texts:
            if (capture := wire_capture.capture) is not None:
                capture.record(wire_capture.S2C, text, self._peer)
            await self._consumer.base_send({"type": "websocket.send", "text": text})

    async def close(self, code: int, reason: str) -> None:
        send_close_frame = getattr(self._protocol, "sendCloseFrame", None)
        if send_close_frame is not None:
            # autobahn's sendClose, which daphne's ASGI close calls, takes only 1000 and
            # 3000-4999 from an application: not 1001 (going away), what a server that stops
            # says. Its frame-level send takes any code, and still waits for the client's reply.
            send_close_frame(code=code, reasonUtf8=reason.encode()[:123], isReply=False)
            return
        await self._consumer.base_send({"type": "websocket.close", "code": code, "reason": reason})

    async def abort(self) -> None:
        drop = getattr(self._protocol, "dropConnection", None)
        if drop is not None:
            drop(abort=True)
        else:
            await self.close(1013, "too far behind; reconnect")

    def forget_unsent(self) -> None:
        """The socket is gone: what it was still owed is let go at once."""
        if self._wire is not None:
            self._wire.forget_unsent()

    def buffered(self) -> int | None:
        return self._wire.held() if self._wire is not None else None
