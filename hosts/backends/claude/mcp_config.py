"""The MCP servers a chat's CLI is handed: the team's enabled for the session (ChatContext
.mcp_servers, stdio or http) and the in-process `client` server of the clients' tools.

The servers go to the CLI as an `--mcp-config` file of the CLI's own (0600, in its HOME, which
only the session's owner's sandbox sees) rather than as the JSON the SDK would put on its
command line: a server's `env` and `headers` hold the team's secrets, and a command line is
anybody's to read in `ps`. Nothing here logs a value of either.

A server is named to the CLI by its name made safe (the CLI's tool names are
`mcp__<server>__<tool>`), never `client`, which is the clients' server; a call's contributor is
looked up by that prefix (`{kind: "mcp", customizationId}`, the spec's id).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hosts.backends.base import McpServerSpec

from ..served_client_tools import SERVER_NAME

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def server_names(specs: Sequence[McpServerSpec]) -> dict[str, McpServerSpec]:
    """Each team server by the name the CLI is given: its own made safe, distinct from the
    clients' server and from each other."""
    named: dict[str, McpServerSpec] = {}
    for spec in specs:
        base = _UNSAFE.sub("_", spec.name) or "server"
        name, n = base, 1
        while name == SERVER_NAME or name in named:
            n += 1
            name = f"{base}_{n}"
        named[name] = spec
    return named


def cli_entry(spec: McpServerSpec) -> dict[str, Any]:
    """The server as the CLI's `mcpServers` takes it."""
    if spec.transport == "http":
        entry: dict[str, Any] = {"type": "http", "url": spec.url}
        if spec.headers:
            entry["headers"] = dict(spec.headers)
        return entry
    command, args = spec.command, list(spec.args)
    if spec.cwd:
        # The CLI's stdio entry names no folder to start in: coreutils' env starts it there.
        command, args = "env", ["-C", spec.cwd, "--", spec.command, *args]
    entry = {"type": "stdio", "command": command, "args": args}
    if spec.env:
        entry["env"] = dict(spec.env)
    return entry


def write_config(path: Path, team: dict[str, McpServerSpec], client_server: bool) -> None:
    """Write the CLI's `--mcp-config` file, readable by its owner alone."""
    servers: dict[str, Any] = {name: cli_entry(spec) for name, spec in team.items()}
    if client_server:
        servers[SERVER_NAME] = {"type": "sdk", "name": SERVER_NAME}
    data = json.dumps({"mcpServers": servers}).encode()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


def contributor(team: dict[str, McpServerSpec], tool_name: str) -> dict[str, str] | None:
    """The ToolCallMcpContributor of a model's call to a team server's tool."""
    # The longest name first: a server's name may itself hold `__`.
    for name in sorted(team, key=len, reverse=True):
        if tool_name.startswith(f"mcp__{name}__"):
            return {"kind": "mcp", "customizationId": team[name].id}
    return None


def mcp_state(status: str, name: str) -> dict[str, Any] | None:
    """A team server's McpServerState from the status the CLI reports for it; None for a
    status this host does not know."""
    if status == "connected":
        return {"kind": "ready"}
    if status == "pending":
        return {"kind": "starting"}
    if status == "disabled":
        return {"kind": "stopped"}
    if status == "failed":
        message = f"The Claude CLI could not connect to the MCP server {name}."
    elif status == "needs-auth":
        # The CLI signs in to a server itself; the host holds no resource to advertise.
        message = f"The MCP server {name} needs a sign-in, which the Claude CLI asks for itself."
    else:
        return None
    return {"kind": "error", "error": {"errorType": "mcp-server-start-failed", "message": message}}
