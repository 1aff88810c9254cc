"""A watch over a client's own files (`vscode-agent-client:` roots), relayed from that client.

The watch channel is this host's own, named as any watch is (watches.py). At its first
subscribe this host asks the client for the watch (`createResourceWatch`, the root as the
client knows it), subscribes to the channel the client answers, on the client's connection,
and takes each `resourceWatch/changed` the client sends back over the action envelope, saying
it on its own channel with the URIs under the client scheme. A client that drops and comes
back is asked for the watch again; released, the client's channel is unsubscribed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.uris import ROOT_URI
from ..channel import Channel
from ..client_requests import ClientRequests, client_uri, to_client_uri
from ..clock import Cancellable
from ..connection import Connection
from ..fanout import Fanout

log = logging.getLogger("ahpd.engine")

CHANGE_TYPES = ("added", "updated", "deleted")


class ClientWatch:
    """One watch channel over a client's files and, while anyone watches it, its relay."""

    def __init__(
        self, channel: Channel, client_id: str, asks: ClientRequests, fanout: Fanout
    ) -> None:
        self.channel = channel
        self.client_id = client_id
        self._asks = asks
        self._fanout = fanout
        self.release_timer: Cancellable | None = None
        #: Whether anyone here watches it (from the first subscribe to the release).
        self._wanted = False
        self._task: asyncio.Task[None] | None = None
        #: The client's connection and the channel it answered, once relayed.
        self._theirs: tuple[Connection, str] | None = None

    @property
    def running(self) -> bool:
        return self._wanted

    def start(self, conn: Connection | None = None) -> None:
        """Someone subscribed (or the client came back on `conn`): ask the client, unless it
        is asked already or relaying on that connection."""
        self._wanted = True
        on = self._theirs[0] if self._theirs is not None else None
        # Back on a new connection before the old one was seen to close, the old relay would
        # say nothing more: the new connection is asked.
        relayed = on is not None and not on.closed and (conn is None or on is conn)
        if not relayed and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._attach(conn), name=f"watch {self.channel.uri}")
            self._task.add_done_callback(_retrieved)

    async def attached(self) -> None:
        """Return once the client answered the watch; its refusal, as it gave it, otherwise."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def arrived(self, conn: Connection) -> None:
        """The client came back: asked for the watch again, if anyone here still watches."""
        if self._wanted and conn.client_id == self.client_id:
            self.start(conn)

    def gone(self, conn: Connection) -> None:
        """A connection closed: the relay on it is over; still watched, the client is asked
        again (on a connection it has now, or one it comes back on within the grace)."""
        if self._theirs is not None and self._theirs[0] is conn:
            self._theirs = None
            if self._wanted:
                self.start()

    async def stop(self) -> None:
        self._wanted = False
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._theirs is not None:
            conn, theirs = self._theirs
            self._theirs = None
            self._asks.unrelay(conn, theirs)
            self._asks.notify(conn, "unsubscribe", {"channel": theirs})

    async def _attach(self, conn: Connection | None) -> None:
        """Ask the client for the watch, on `conn` (the one it came back on) or the one it
        has, and relay what it says on the channel it answers."""
        state = self.channel.state
        root = str(state["root"])
        named = client_uri(root)
        assert named is not None
        params: dict[str, Any] = {
            "channel": ROOT_URI,
            "uri": named[1],
            "recursive": bool(state["recursive"]),
        }
        for key in ("includes", "excludes"):
            if key in state:
                params[key] = state[key]
        if conn is None or conn.closed:
            conn = await self._asks.connection(self.client_id)
        answer = await self._asks.request(conn, "createResourceWatch", params, root)
        theirs = answer.get("channel") if isinstance(answer, dict) else None
        if not isinstance(theirs, str) or not theirs:
            said = f"Client {self.client_id} answered createResourceWatch with no channel"
            raise ProtocolError(ErrorCode.INTERNAL_ERROR, said)
        self._asks.relay(conn, theirs, self._take)
        try:
            await self._asks.request(conn, "subscribe", {"channel": theirs}, root)
        except BaseException:
            self._asks.unrelay(conn, theirs)
            raise
        if not self._wanted:  # released while the client answered
            self._asks.unrelay(conn, theirs)
            self._asks.notify(conn, "unsubscribe", {"channel": theirs})
            return
        self._theirs = (conn, theirs)

    def _take(self, envelope: dict[str, Any]) -> None:
        """One envelope the client sent on its channel: its changes under this root, said."""
        action = envelope.get("action")
        if not isinstance(action, dict) or action.get("type") != "resourceWatch/changed":
            log.info("client %s sent a watch no change: %r", self.client_id, action)
            return
        changes = action.get("changes")
        items = changes.get("items") if isinstance(changes, dict) else None
        named = client_uri(str(self.channel.state["root"]))
        root = named[1].rstrip("/") if named is not None else ""
        said: list[dict[str, str]] = []
        for item in items if isinstance(items, list) else []:
            uri = item.get("uri") if isinstance(item, dict) else None
            kind = item.get("type") if isinstance(item, dict) else None
            if not isinstance(uri, str) or kind not in CHANGE_TYPES:
                continue
            # A client speaks only of its own files, and of those only under the watch's root.
            if uri == root or uri.startswith(root + "/"):
                said.append({"uri": to_client_uri(self.client_id, uri), "type": str(kind)})
        if said and self._wanted:
            self._fanout.emit(
                self.channel, {"type": "resourceWatch/changed", "changes": {"items": said}}
            )


def _retrieved(task: asyncio.Task[None]) -> None:
    """A failed ask is said to the subscriber that awaits it, and logged by the ask; a task
    nobody awaited must not warn that its exception went unread."""
    if not task.cancelled():
        task.exception()
