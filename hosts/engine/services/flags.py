"""A session's or a chat's read and archived bits."""

from __future__ import annotations

from typing import Any

from ..host import Host
from ..sessions import LiveChat, LiveSession
from .caller import Caller

#: The protocol's key -> the record's attribute.
FLAGS = {"isRead": "is_read", "isArchived": "is_archived"}


def do_set_flag(
    host: Host, caller: Caller, uri: str, key: str, action: dict[str, Any]
) -> str | None:
    """Say the caller's session/ or chat/ isReadChanged or isArchivedChanged on the session or
    chat `uri`, and keep it.

    Why it cannot be taken (a default chat is archived with its session), or None.
    """
    target: LiveSession | LiveChat | None = host.sessions.session(uri) or host.sessions.chat(uri)
    assert target is not None, "a flag's rule runs on a session or a chat the table holds"
    session = target if isinstance(target, LiveSession) else target.session
    caller.may_in(session, f"{'session' if isinstance(target, LiveSession) else 'chat'}:mark")
    if isinstance(target, LiveChat) and key == "isArchived" and target.is_default:
        return "Only a known independently manageable non-default chat can be archived."
    caller.say(host, target.channel, action)
    setattr(target.record, FLAGS[key], bool(action[key]))
    if isinstance(target, LiveSession):
        host.sessions.touch(target)
        # An archived session's chats are not movable; one brought back, again.
        host.sessions.say_movable_all(target)
    else:
        host.sessions.save_chat(target)
        host.sessions.chat_row_moved(target)
    return None
