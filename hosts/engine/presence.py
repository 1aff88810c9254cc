"""Who is in a session: a client leaves its activeClients when it stops watching it.

A subscription to the session or to any chat it holds keeps a client in. A client that
unsubscribes, or reconnects without the session, leaves at once; one that drops has a grace
(30 s by default) to come back. Mixed into `Sessions` (sessions.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .channel import Channel
    from .host import Host
    from .sessions import LiveChat, LiveSession


class PresenceMixin:
    if TYPE_CHECKING:
        host: Host
        sessions: dict[str, LiveSession]
        chats: dict[str, LiveChat]

    def _sessions_of(self, channels: list[Channel]) -> set[str]:
        uris = set()
        for channel in channels:
            if channel.kind == "session":
                uris.add(channel.uri)
            elif channel.kind == "chat" and channel.uri in self.chats:
                uris.add(self.chats[channel.uri].session.record.uri)
        return uris

    def _present(self, client_id: str, session: LiveSession) -> bool:
        """A subscription to the session or to any chat it holds keeps a client in."""
        watched = {session.record.uri, *session.chats}
        return any(
            conn.client_id == client_id and not conn.closed and watched & conn.subscriptions.keys()
            for conn in self.host.connections
        )

    def left(self, client_id: str, channels: list[Channel]) -> None:
        """Take a client out of each session it no longer watches (said as this host's)."""
        for uri in self._sessions_of(channels):
            session = self.sessions.get(uri)
            if session is None:
                continue
            clients = session.channel.state.get("activeClients", [])
            if not any(c.get("clientId") == client_id for c in clients):
                continue
            if not self._present(client_id, session):
                self.host.emit(
                    session.channel,
                    {"type": "session/activeClientRemoved", "clientId": client_id},
                )

    def left_later(self, client_id: str, channels: list[Channel]) -> None:
        if not self._sessions_of(channels):
            return
        asyncio.get_running_loop().call_later(
            self.host.settings.presence_grace_s, self.left, client_id, channels
        )
