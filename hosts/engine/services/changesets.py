"""A changeset's one client action: review ticks on a session's or a turn's changes."""

from __future__ import annotations

from typing import Any

from ..changesets import scopes
from ..host import Host
from .caller import Caller


def do_review_files(host: Host, caller: Caller, uri: str, action: dict[str, Any]) -> str | None:
    """Say the caller's changeset/filesReviewChanged on the changeset `uri` and keep its ticks,
    each against what the file holds now. Why it cannot be taken, or None.

    The working tree's changes keep no review (a tick there would say nothing true for long);
    the session's and each turn's do, and a file that changes again loses its tick.
    """
    changeset = host.changesets.get(uri)
    if changeset is None:
        return f"Resource not found: {uri}"
    if changeset.scope == scopes.UNCOMMITTED:
        return f"{uri} keeps no review: it is the working tree's uncommitted changes"
    session = host.sessions.session(changeset.session)
    if session is None:
        return f"Resource not found: {uri}"
    caller.may_in(session, "session:review")
    caller.say(host, changeset.channel, action)
    host.changesets.keep_review(changeset, session, action["files"], bool(action["reviewed"]))
    return None
