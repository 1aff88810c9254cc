"""What a client asks of a session's MCP servers: start one, stop one, let a turn go on while
one starts (rules: rules/session_rules.py; the servers: sessions/mcp_servers.py).

Each request is said to every client of the session with its origin (the reducer moves the
server to starting, to stopped, or clears its blocking), then asked of whoever runs the server,
which says the state it reaches. A server the session does not list is refused, naming it.
"""

from __future__ import annotations

from typing import Any

from ..host import Host
from ..sessions import LiveSession
from ..sessions.mcp_servers import SessionMcp
from .caller import Caller


def _said(
    host: Host, caller: Caller, session: LiveSession, action: dict[str, Any]
) -> tuple[SessionMcp, dict[str, Any]] | str:
    """The session's servers and the named one's state before the request, the request said;
    or why it is refused."""
    server_id = action["id"]
    mcp = session.mcp
    if mcp is None or server_id not in mcp.specs:
        return f"No MCP server {server_id} in session {session.record.uri}"
    before = mcp.state(server_id)
    caller.say(host, session.channel, action)
    return mcp, before


def do_start_mcp_server(
    host: Host, caller: Caller, session: LiveSession, action: dict[str, Any]
) -> str | None:
    """session/mcpServerStartRequested: started (or its running state said again); where the
    session's agent runs its own servers, an error in the reference's words unless ready."""
    said = _said(host, caller, session, action)
    if isinstance(said, str):
        return said
    mcp, before = said
    mcp.started(action["id"], before)
    return None


def do_stop_mcp_server(
    host: Host, caller: Caller, session: LiveSession, action: dict[str, Any]
) -> str | None:
    """session/mcpServerStopRequested: stopped, and held stopped until a person starts it;
    where the session's agent runs its own servers, logged and its state said again."""
    said = _said(host, caller, session, action)
    if isinstance(said, str):
        return said
    mcp, before = said
    mcp.stopped(action["id"], before)
    return None


def do_background_mcp_server(
    host: Host, caller: Caller, session: LiveSession, action: dict[str, Any]
) -> str | None:
    """session/mcpServerBackgroundRequested: said, the reducer clearing a starting server's
    blocking. No agent here holds a turn on a starting server, so nothing more is asked."""
    said = _said(host, caller, session, action)
    return said if isinstance(said, str) else None
