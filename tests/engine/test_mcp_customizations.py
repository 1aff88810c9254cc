"""A session's MCP servers as a client sees them: the customization names a server without
anything of it that may be a secret."""

from __future__ import annotations

import json

from hosts.backends.base import McpServerSpec
from hosts.engine.sessions.mcp_servers import customization, customization_uri


def test_an_http_servers_uri_drops_its_user_password_query_and_fragment():
    spec = McpServerSpec(
        id="mcp:issues",
        name="issues",
        transport="http",
        url="https://bot:pa55word@mcp.example.com:8443/mcp?token=abc123#frag",
        headers={"Authorization": "Bearer abc123"},
    )
    assert customization_uri(spec) == "https://mcp.example.com:8443/mcp"
    said = json.dumps(customization(spec))
    assert "pa55word" not in said and "abc123" not in said and "bot" not in said


def test_a_stdio_server_is_named_by_its_entry_and_says_neither_its_command_nor_its_env():
    spec = McpServerSpec(
        id="mcp:my files",
        name="my files",
        transport="stdio",
        command="/opt/secret-tool/bin/serve",
        args=("--key", "k3y"),
        env={"TOKEN": "t0ken"},
    )
    shown = customization(spec)
    assert shown == {
        "id": "mcp:my files",
        "uri": "ahpd-mcp:my%20files",
        "name": "my files",
        "type": "mcpServer",
        "state": {"kind": "stopped"},
    }
