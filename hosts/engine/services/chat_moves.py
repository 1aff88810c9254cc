"""moveChat: a chat placed after another in its own session, or handed to another session.

Served as VS Code's host serves it: gated by root config's `chatMoves.enabled`; every refusal
is -32602 with the reason from VS Code's fixed set in the error's data (`{"reason": ...}`),
and changes nothing. The whole move is checked before anything is written.
"""

from __future__ import annotations

import uuid
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.validation import move_destination
from ..host import Host
from ..sessions import LiveChat, LiveSession
from .caller import Caller, chat_of


def refused(reason: str, words: str) -> ProtocolError:
    """A move refused: its words, and its reason in the error's data."""
    return ProtocolError(ErrorCode.INVALID_PARAMS, words, {"reason": reason})


async def do_move_chat(host: Host, caller: Caller, uri: str, destination: Any) -> str:
    """Move the chat `uri` as `destination` says; the session that holds it after."""
    session_uri, after = move_destination(destination)
    chat = chat_of(host, uri)
    source = chat.session
    caller.may_in(source, "chat:create")
    if session_uri is None:
        caller.may("session:create")
        caller.may_in(source, "chat:dispose")
        _check_source(host, chat)
        _check_between(source, source)
        # The new session's id is the chat's backend id, where it has one.
        new_uri = f"ahp-session:/{chat.record.backend_id or uuid.uuid4()}"
        if host.sessions.taken(new_uri):
            new_uri = f"ahp-session:/{uuid.uuid4()}"
        session = await host.sessions.move_to_new(chat, new_uri)
        return session.record.uri
    target = host.sessions.session(session_uri)
    if target is not None and target is not source:
        caller.may_in(source, "chat:dispose")
        caller.may_in(target, "chat:create")
    _check_source(host, chat)
    if target is None:
        raise refused("destinationNotFound", f"Destination session not found: {session_uri}")
    if target is not source:
        _check_between(source, target)
    if after is not None and (after == uri or after not in target.record.chats):
        raise refused("invalidAnchor", f"The anchor is not another chat of the session: {after}")
    if target is source:
        await host.sessions.reorder(chat, after)
    else:
        await host.sessions.move(chat, target, after)
    return target.record.uri


def _check_source(host: Host, chat: LiveChat) -> None:
    if not host.sessions.moves_enabled():
        raise refused("disabled", "Moving chats is not enabled.")
    state = chat.state()
    if chat.is_default:
        raise refused("notMovable", "The session's default chat cannot be moved.")
    if state.get("activeTurn") is not None:
        raise refused("notMovable", "A chat running a turn cannot be moved.")
    if not state.get("turns"):
        raise refused("notStarted", "A chat with no turn yet cannot be moved.")


def _check_between(source: LiveSession, target: LiveSession) -> None:
    for session in (source, target):
        if session.record.is_archived:
            raise refused("sessionArchived", f"Session is archived: {session.record.uri}")
    if not source.record.working_directories:
        raise refused("workspaceless", "A chat with no folder cannot be moved.")
    if target.record.provider != source.record.provider:
        raise refused(
            "differentProvider",
            f"The destination runs {target.record.provider}, not {source.record.provider}.",
        )
