"""What a client changes of a session's customizations (rules: rules/session_rules.py)."""

from __future__ import annotations

from typing import Any

from ..host import Host
from ..sessions import LiveSession
from .caller import Caller


def do_toggle_customization(
    host: Host, caller: Caller, session: LiveSession, action: dict[str, Any]
) -> str | None:
    """A client's session/customizationToggled: said to every client of the session with its
    origin, the decisions kept for the session (an empty list restores the default), and then
    whatever the customization's source does with it (an MCP server started or stopped).
    A customization the session does not list is refused, naming it."""
    customization_id = action["id"]
    if session.customizations.find(customization_id) is None:
        return f"No customization {customization_id} in session {session.record.uri}"
    caller.say(host, session.channel, action)
    decisions = [dict(entry) for entry in action["enablement"]]
    if decisions:
        session.record.enablement[customization_id] = decisions
    else:
        session.record.enablement.pop(customization_id, None)
    host.sessions.save_session(session)
    session.customizations.toggled(customization_id)
    return None
