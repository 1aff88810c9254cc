"""Bearer tokens for a protected resource other than this host's users (an MCP server's),
pushed with `authenticate`, kept per connection with the moment each runs out.

A token is spent only on the sessions of the person whose connection pushed it, while that
connection watches the session (seed 000, the authenticate row): a person's token never
reaches another person's session, and a connection that goes takes its tokens with it. An
empty token withdraws the one held. One that runs out is neither spent nor kept, and its
connection alone is told auth/required with reason `expired`, naming the session it was pushed
for where the connection still watches it, else the root channel.

A resource is taken only where this host advertised it to that connection: an MCP server of a
session it watches waits for it (McpServerAuthRequiredState.resource), or a tool call there
does (ToolCallAuthRequiredState.auth.resource).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..protocol.uris import ROOT_URI
from .connection import Connection

#: Said with (resource, the person's ref) after a token is pushed: the MCP servers of that
#: person's sessions waiting for it connect again.
Pushed = Callable[[str, str], None]


@dataclass(eq=False, slots=True)
class HeldToken:
    token: str
    scopes: tuple[str, ...]
    #: The resource's RFC 9728 record as this host advertised it, for an auth/required.
    metadata: Mapping[str, Any]
    #: The session it was advertised on (a session the connection watched then).
    session: str
    timer: asyncio.TimerHandle | None = None
    expired: bool = False


@dataclass(eq=False)
class ResourceTokens:
    #: How a notification reaches one connection (ClientRequests.notify).
    notify: Callable[[Connection, str, dict[str, Any]], None]
    on_pushed: list[Pushed] = field(default_factory=list)
    _held: dict[Connection, dict[str, HeldToken]] = field(default_factory=dict)

    def put(
        self,
        conn: Connection,
        resource: str,
        token: str,
        *,
        metadata: Mapping[str, Any],
        session: str,
        expires_in: int | None = None,
        scopes: tuple[str, ...] = (),
    ) -> None:
        """Keep a token the connection pushed for an advertised resource (replacing one held)."""
        self.withdraw(conn, resource)
        held = HeldToken(token, scopes, dict(metadata), session)
        if expires_in is not None:
            held.timer = asyncio.get_running_loop().call_later(
                expires_in, self._expire, conn, resource, held
            )
        self._held.setdefault(conn, {})[resource] = held
        for listener in list(self.on_pushed):
            listener(resource, conn.principal.ref)

    def withdraw(self, conn: Connection, resource: str) -> None:
        """Take back the connection's token for the resource (an empty authenticate)."""
        held = self._held.get(conn, {}).pop(resource, None)
        if held is not None and held.timer is not None:
            held.timer.cancel()

    def gone(self, conn: Connection) -> None:
        """The connection closed: its tokens go with it."""
        for held in self._held.pop(conn, {}).values():
            if held.timer is not None:
                held.timer.cancel()

    def token_for(self, session: str, owner: str, resource: str) -> str | None:
        """The token to spend on `resource` for `session`: one its owner pushed on a connection
        that watches it; the one pushed last where several do."""
        found: str | None = None
        for conn, held in self._live(resource):
            if conn.principal.ref == owner and session in conn.subscriptions:
                found = held.token
        return found

    def _live(self, resource: str) -> Iterator[tuple[Connection, HeldToken]]:
        for conn, tokens in self._held.items():
            held = tokens.get(resource)
            if held is not None and not held.expired and not conn.closed:
                yield conn, held

    def _expire(self, conn: Connection, resource: str, held: HeldToken) -> None:
        held.expired = True
        if self._held.get(conn, {}).get(resource) is held:
            del self._held[conn][resource]
        channel = held.session if held.session in conn.subscriptions else ROOT_URI
        self.notify(
            conn,
            "auth/required",
            {"channel": channel, "resource": dict(held.metadata), "reason": "expired"},
        )


def advertised(state: Mapping[str, Any], resource: str) -> Mapping[str, Any] | None:
    """The RFC 9728 record of `resource` where a session's state asks for it (an MCP server
    waiting for a sign-in, or a tool call blocked on one, in `inputNeeded`), else None."""
    for entry in state.get("customizations") or ():
        server_state = entry.get("state") if isinstance(entry, dict) else None
        if isinstance(server_state, dict) and server_state.get("kind") == "authRequired":
            metadata = server_state.get("resource")
            if isinstance(metadata, dict) and metadata.get("resource") == resource:
                return metadata
    for request in state.get("inputNeeded") or ():
        call = request.get("toolCall") if isinstance(request, dict) else None
        auth = call.get("auth") if isinstance(call, dict) else None
        metadata = auth.get("resource") if isinstance(auth, dict) else None
        if isinstance(metadata, dict) and metadata.get("resource") == resource:
            return metadata
    return None
