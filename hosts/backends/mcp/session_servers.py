"""The MCP servers one session's host-run agent loop reaches (base.McpServers): each server a
connection of its own, started, stopped and started again on the engine's word, all of them
closed when the session goes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hosts.backends.base import McpCallOutcome, McpServerSpec, McpTool, TurnEvents
from hosts.backends.sandbox import Jail

from .connection import McpServerConnection, OnState
from .sign_in import TokenFor


class SessionMcpServers:
    def __init__(
        self,
        *,
        folder: Path | None,
        on_state: OnState,
        jail: Jail | None = None,
        token_for: TokenFor | None = None,
    ) -> None:
        """`folder`: where a stdio server with no `cwd` runs (the session's first folder);
        `on_state`: told each server's state (McpServerState) by its spec id; `token_for`:
        the token a person pushed for a protected resource, which an http server's requests
        carry once it asked for a sign-in (None: no sign-in here)."""
        self._folder = folder
        self._on_state = on_state
        self._jail = jail
        self._token_for = token_for
        self._connections: dict[str, McpServerConnection] = {}

    def state(self, server_id: str) -> dict[str, Any] | None:
        connection = self._connections.get(server_id)
        return dict(connection.state) if connection is not None else None

    def running(self, server_id: str) -> bool:
        """Starting or ready, and not being stopped."""
        connection = self._connections.get(server_id)
        return connection is not None and connection.running and not connection.stopping

    def start(self, spec: McpServerSpec) -> None:
        """Connect to the server unless it is connecting or connected already."""
        connection = self._connections.get(spec.id)
        if connection is None or (connection.spec != spec and not connection.running):
            connection = McpServerConnection(
                spec,
                folder=self._folder,
                on_state=self._on_state,
                jail=self._jail,
                token_for=self._token_for,
            )
            self._connections[spec.id] = connection
        connection.start()

    async def restart(self, spec: McpServerSpec) -> None:
        """Disconnect (if connected) and connect again."""
        connection = self._connections.get(spec.id)
        if connection is not None:
            await connection.stop()
        self.start(spec)

    def signed_in(self, resource: str) -> None:
        """A token was pushed for `resource`: every server waiting for that sign-in connects
        again."""
        for connection in self._connections.values():
            connection.signed_in(resource)

    async def stop(self, server_id: str) -> None:
        connection = self._connections.get(server_id)
        if connection is not None:
            await connection.stop()

    async def close(self) -> None:
        """Stop every server (the session is gone)."""
        await asyncio.gather(
            *(c.stop() for c in self._connections.values()), return_exceptions=True
        )

    # -- base.McpServers ----------------------------------------------------------------------

    def tools(self) -> list[McpTool]:
        return [
            tool
            for connection in self._connections.values()
            if connection.ready
            for tool in connection.tools
        ]

    async def settled(self) -> None:
        await asyncio.gather(*(c.settled() for c in self._connections.values()))

    async def until_signed_in(self, server_id: str) -> bool:
        connection = self._connections.get(server_id)
        return await connection.until_signed_in() if connection is not None else False

    async def call(
        self, tool: McpTool, arguments: Mapping[str, Any], events: TurnEvents
    ) -> McpCallOutcome:
        connection = self._connections.get(tool.server_id)
        if connection is None:
            return McpCallOutcome(False, f"The MCP server {tool.server_name} is not running.")
        return await connection.call(tool.name, arguments, events)
