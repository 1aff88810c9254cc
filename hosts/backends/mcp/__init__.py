"""The host's own MCP client, on the mcp SDK: a session's MCP servers as its agent loop (the
openai backend) reaches them. An ACP agent starts its own and is handed their specs instead."""

from .connection import McpServerConnection
from .session_servers import SessionMcpServers

__all__ = ["McpServerConnection", "SessionMcpServers"]
