"""Who is in a session: a client leaves its activeClients when it stops watching it.

A subscription to the session or to any chat it holds keeps a client in. A client that
unsubscribes, or reconnects without the session, leaves at once; one that drops has a grace
(30 s by default) to come back. The fan-out tells this object when a client stops watching.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..channel import Channel
from ..fanout import Fanout
from .client_tool_calls import fail_calls_of
from .live_session import LiveSession
from .session_table import Sessions


class Presence:
    def __init__(self, sessions: Sessions, fanout: Fanout, grace_s: float) -> None:
        self._sessions = sessions
        self._fanout = fanout
        self._grace_s = grace_s
        fanout.on_left(self._client_left)

    def _client_left(self, client_id: str, channels: list[Channel], dropped: bool) -> None:
        if dropped:
            self.left_later(client_id, channels)
        else:
            self.left(client_id, channels)

    def _sessions_of(self, channels: Iterable[Channel]) -> set[str]:
        uris = set()
        for channel in channels:
            if channel.kind == "session":
                uris.add(channel.uri)
            elif channel.kind == "chat":
                chat = self._sessions.chat(channel.uri)
                if chat is not None:
                    uris.add(chat.session.record.uri)
        return uris

    def _present(self, client_id: str, session: LiveSession) -> bool:
        """A subscription to the session or to any chat it holds keeps a client in."""
        return self._fanout.watching(client_id, (session.record.uri, *session.chats))

    def left(self, client_id: str, channels: Iterable[Channel]) -> None:
        """Take a client out of each session it no longer watches (said as this host's)."""
        for uri in self._sessions_of(channels):
            session = self._sessions.session(uri)
            if session is None:
                continue
            clients = session.channel.state.get("activeClients", [])
            if not any(c.get("clientId") == client_id for c in clients):
                continue
            if not self._present(client_id, session):
                session.say({"type": "session/activeClientRemoved", "clientId": client_id})
                fail_calls_of(session, client_id)

    def left_later(self, client_id: str, channels: list[Channel]) -> None:
        if not self._sessions_of(channels):
            return
        asyncio.get_running_loop().call_later(self._grace_s, self.left, client_id, channels)

    def kept_only(self, client_id: str, kept: Iterable[Channel]) -> None:
        """A client came back (reconnect) watching only `kept`: it left every other session."""
        keep = set(kept)
        self.left(
            client_id,
            [s.channel for s in self._sessions.sessions.values() if s.channel not in keep],
        )
