"""One client connection as the engine holds it: who it is, what it watches, what it is owed.

A plain record: the fan-out core (fanout.py) is the only writer of its subscriptions and its
outbound queue, and the router (router.py) of its handshake fields.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from ..protocol.versions import Version
from .channel import Channel
from .ports import Transport
from .principal import ANONYMOUS, Principal


@dataclass(eq=False, slots=True)
class Connection:
    transport: Transport
    peer: str
    #: Who this connection is now, and who its token admitted it as (for a sign-out).
    principal: Principal = ANONYMOUS
    admitted_principal: Principal = ANONYMOUS
    client_id: str | None = None
    version_text: str | None = None
    version: Version | None = None
    #: An older VS Code window, which computes its default chat's URI from the session's.
    legacy_vscode_chat_uris: bool = False
    #: The name its clientInfo gave at initialize (kept across a reconnect), if any.
    client_name: str | None = None
    closed: bool = False
    subscriptions: dict[str, Channel] = field(default_factory=dict)
    #: Frames sent to it during the loop's current pass, written together at the pass's end
    #: (one system call for all of them, however many actions the pass handled).
    this_pass: list[str] = field(default_factory=list)
    #: Frames its socket did not take at once, for the flusher.
    outbox: deque[str] = field(default_factory=deque)
    outbox_bytes: int = 0
    #: What this connection held behind when last sent to (its outbox and its socket's
    #: buffer): its part of the fan-out's running total of queued bytes.
    queued: int = 0
    #: Done once this connection's last action committed before it is said (a root config
    #: push) is said; its later frames wait for it, so its actions are said in its order.
    unsaid: asyncio.Future[None] | None = None

    @property
    def ready(self) -> bool:
        """Whether the handshake (initialize or reconnect) is done."""
        return self.version is not None

    def __repr__(self) -> str:
        return f"<Connection client={self.client_id!r} peer={self.peer}>"
