"""One client connection: its handshake, its subscriptions and its bounded outbound queue."""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

from ..protocol import jsonrpc
from ..protocol.versions import Version
from .principal import Principal

if TYPE_CHECKING:
    from .channel import Channel
    from .host import Host
    from .ports import Transport

log = logging.getLogger("ahpd.engine")


class Connection:
    """Frames in through `receive_text`; frames out, in order, through the host's flusher."""

    def __init__(self, host: Host, transport: Transport, peer: str) -> None:
        self.host = host
        self.transport = transport
        self.peer = peer
        self.client_id: str | None = None
        self.version_text: str | None = None
        self.version: Version | None = None
        self.subscriptions: dict[str, Channel] = {}
        self.closed = False
        #: Who this connection is now, and who the door admitted it as (for a sign-out).
        self.principal: Principal = Principal("anonymous", ())
        self.door_principal: Principal = self.principal
        #: An older VS Code window, which computes its default chat's URI from the session's.
        self.legacy_vscode_chat_uris = False
        self.outbox: deque[str] = deque()
        self.outbox_bytes = 0

    @property
    def ready(self) -> bool:
        """Whether the handshake (initialize or reconnect) is done."""
        return self.version is not None

    def __repr__(self) -> str:
        return f"<Connection client={self.client_id!r} peer={self.peer}>"

    async def receive_text(self, text: str) -> None:
        """Take one text frame; answer it, keeping the connection up whatever it holds."""
        try:
            incoming = jsonrpc.parse(text)
        except jsonrpc.FrameError as exc:
            self.enqueue(jsonrpc.error_frame(exc.request_id, exc))
            return
        if incoming is None:
            return
        answer = await self.host.handle(self, incoming)
        if answer is not None:
            self.enqueue(answer)

    def enqueue(self, text: str) -> None:
        """Queue a frame for this client, or close the client if it is too far behind."""
        if self.closed:
            return
        limit = self.host.queue_limit
        if limit:
            behind = self.outbox_bytes + (self.transport.buffered() or 0)
            # A client that has taken everything is never behind, whatever one frame weighs.
            if behind and behind + len(text) > limit:
                self.host.drop_slow(self, behind)
                return
        self.outbox.append(text)
        self.outbox_bytes += len(text)
        self.host.wake_flusher(self)

    async def flush(self) -> None:
        """Hand every queued frame to the transport, in order, in one batch."""
        while self.outbox and not self.closed:
            batch = list(self.outbox)
            self.outbox.clear()
            self.outbox_bytes = 0
            if len(batch) == 1:
                await self.transport.send(batch[0])
            else:
                await self.transport.send_batch(batch)
