"""The session's MCP servers as an ACP agent is handed them in session/new and session/load
(it starts and connects to them itself), and what the host can know of their state: starting
until the agent took the session, then ready, or failed in the agent's words.

ACP's shapes: stdio {name, command (absolute), args, env: [{name, value}]}; http {type: http,
name, url, headers: [{name, value}]}, only to an agent whose initialize said
mcpCapabilities.http. A server the agent cannot take is said failed, saying why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acp.schema import (
    AcpMcpServer,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    SseMcpServer,
)

from hosts.backends.base import McpServerSpec
from hosts.backends.sandbox import needs_of

#: What ACP's session/new takes as one of its mcpServers.
Handed = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def acp_server(spec: McpServerSpec) -> Handed:
    """The spec in ACP's shape (secrets included: they are the agent's to use)."""
    if spec.transport == "http":
        return HttpMcpServer(
            type="http",
            name=spec.name,
            url=spec.url,
            headers=[HttpHeader(name=k, value=v) for k, v in spec.headers.items()],
        )
    command = spec.command
    if "/" not in command:
        command = shutil.which(command, path=os.environ.get("PATH")) or command
    return McpServerStdio(
        name=spec.name,
        command=command,
        args=list(spec.args),
        env=[EnvVariable(name=k, value=v) for k, v in spec.env.items()],
    )


def needs(specs: Sequence[McpServerSpec]) -> list[str]:
    """What the agent's sandbox must hold, read-only, for it to start its stdio servers: each
    program (its interpreter, its virtualenv), the paths its arguments name, its folder."""
    found: list[str] = []
    for spec in specs:
        if spec.transport != "stdio":
            continue
        found += [str(path) for path in needs_of(spec.command, os.environ.get("PATH"))]
        found += [arg for arg in spec.args if os.path.isabs(arg)]
        if spec.cwd:
            found.append(spec.cwd)
    return found


class HandedServers:
    """The servers handed to one agent session, and their states as the host can know them."""

    def __init__(
        self,
        specs: Sequence[McpServerSpec],
        takes_http: bool,
        on_state: Callable[[str, Mapping[str, Any]], None] | None,
    ) -> None:
        self._on_state = on_state
        self.handed = [s for s in specs if s.transport == "stdio" or takes_http]
        self.refused = [s for s in specs if s not in self.handed]
        #: Whether the agent took them (said ready), so that its going stops them.
        self._taken = False

    def servers(self) -> list[Handed]:
        return [acp_server(spec) for spec in self.handed]

    def starting(self) -> None:
        for spec in self.handed:
            self._say(spec, {"kind": "starting"})
        for spec in self.refused:
            self._failed(spec, "The agent does not take MCP servers over HTTP.")

    def ready(self) -> None:
        self._taken = True
        for spec in self.handed:
            self._say(spec, {"kind": "ready"})

    def stopped(self) -> None:
        """The agent went, and the servers it started with it (a failure stays said)."""
        if not self._taken:
            return
        self._taken = False
        for spec in self.handed:
            self._say(spec, {"kind": "stopped"})

    def failed(self, why: str) -> None:
        for spec in self.handed:
            self._failed(spec, why)

    def _failed(self, spec: McpServerSpec, why: str) -> None:
        error = {"errorType": "mcp-server-start-failed", "message": why}
        self._say(spec, {"kind": "error", "error": error})

    def _say(self, spec: McpServerSpec, state: Mapping[str, Any]) -> None:
        if self._on_state is not None:
            self._on_state(spec.id, dict(state))
