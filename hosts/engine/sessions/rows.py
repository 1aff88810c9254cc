"""A session's row: what listSessions and the root's session notifications say of it."""

from __future__ import annotations

from ...protocol.reducers._common import (
    STATUS_IDLE,
    STATUS_IN_PROGRESS,
    STATUS_IS_ARCHIVED,
    STATUS_IS_READ,
)
from ...protocol.shapes import SessionSummary
from ..clock import iso
from .live_session import LiveSession
from .session_meta import session_meta


def session_row(session: LiveSession) -> SessionSummary:
    """The session's row, made again only when something it says moved: the session's held
    state (which every accepted action replaces), whether a turn runs, or its modified time.
    A row handed out is never changed in place, so callers may keep it."""
    state, running, modified = (
        session.channel.state,
        session.running,
        session.record.modified_ms,
    )
    cached = session.row
    if cached is not None:
        (was_state, was_running, was_modified), row = cached
        if was_state is state and was_running == running and was_modified == modified:
            return row
    row = _made(session, running)
    session.row = ((state, running, modified), row)
    return row


def _made(session: LiveSession, running: bool) -> SessionSummary:
    record = session.record
    state = session.channel.state
    activity = STATUS_IN_PROGRESS if running else STATUS_IDLE
    flags = int(state["status"]) & (STATUS_IS_READ | STATUS_IS_ARCHIVED)
    row: SessionSummary = {
        "resource": record.uri,
        "provider": record.provider,
        "title": state["title"],
        "status": activity | flags,
        "createdAt": iso(record.created_ms),
        "modifiedAt": iso(record.modified_ms),
        "workingDirectories": list(record.working_directories),
        "chats": [
            {"resource": c["resource"], "title": c["title"], "status": c["status"]}
            for c in state["chats"]
        ],
        "defaultChat": record.default_chat,
    }
    if meta := session_meta(record, session.git):
        # The session's own `_meta`, its git facts beside its owner.
        row["_meta"] = meta
    if record.origin:
        row["origin"] = record.origin
    return row
