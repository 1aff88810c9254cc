"""What the REST API asks of the engine: the socket's session work, for a principal.

Each function checks the principal's grants as the socket does, and raises the socket's
ProtocolError (the API maps its code to an HTTP status).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ..protocol.errors import ErrorCode, ProtocolError
from .commands.sessions import agent_for, config_values, working_directories
from .principal import Principal

if TYPE_CHECKING:
    from .host import Host
    from .sessions import LiveChat, LiveSession


def _require(principal: Principal, needed: str) -> None:
    if not principal.may(needed):
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, f"{principal.ref} may not {needed} here")


def _session(host: Host, uri: str) -> LiveSession:
    session = host.sessions.sessions.get(uri)
    if session is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {uri}")
    return session


def _message(text: Any, sender: str) -> dict[str, Any]:
    if not isinstance(text, str) or not text.strip():
        raise ProtocolError(ErrorCode.INVALID_PARAMS, "message must be a non-empty string")
    return {"text": text, "origin": {"kind": "user"}, "_meta": {"ahpd.sender": sender}}


async def do_create_session(
    host: Host,
    principal: Principal,
    *,
    provider: Any,
    directories: Any,
    config: Any,
    message: Any,
) -> dict[str, Any]:
    """A new session whose first message starts its first turn."""
    _require(principal, "session:create")
    _require(principal, "chat:send")
    provider = agent_for(host, provider)
    first = _message(message, principal.ref)
    dirs = working_directories({"workingDirectories": directories}, "sessions")
    values = config_values(host, provider, config, "sessions")
    uri = f"ahp-session:/{uuid.uuid4()}"
    session = host.sessions.create(principal.ref, uri, provider, dirs, values, None)
    chat = session.chats[session.record.default_chat]
    turn_id = host.sessions.start_host_turn(chat, first)
    await host.writes.drain()
    return {"uri": uri, "chat": chat.record.uri, "turnId": turn_id}


async def do_send_message(
    host: Host, principal: Principal, uri: str, message: Any, chat_uri: Any = None
) -> dict[str, Any]:
    """A message to a session's chat (its default one unless named) starts a turn there."""
    _require(principal, "chat:send")
    session = _session(host, uri)
    chat: LiveChat | None = session.chats.get(chat_uri or session.record.default_chat)
    if chat is None:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"No chat {chat_uri} in {uri}")
    first = _message(message, principal.ref)
    if chat.busy:
        raise ProtocolError(
            ErrorCode.TURN_IN_PROGRESS, "A turn is already running in this chat; cancel it first"
        )
    turn_id = host.sessions.start_host_turn(chat, first)
    await host.writes.drain()
    return {"chat": chat.record.uri, "turnId": turn_id}


async def do_cancel(host: Host, principal: Principal, uri: str) -> dict[str, Any]:
    """Stop every turn running in the session, for every client at once."""
    _require(principal, "chat:cancel")
    session = _session(host, uri)
    stopped = [
        turn_id
        for chat in list(session.chats.values())
        if (turn_id := host.sessions.stop_turn(chat, said=False)) is not None
    ]
    if not stopped:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"No turn is running in {uri}")
    return {"cancelled": stopped}


async def do_dispose(host: Host, principal: Principal, uri: str) -> None:
    """Dispose a session; only its owner or an admin may."""
    _require(principal, "session:dispose")
    session = _session(host, uri)
    if session.record.owner and session.record.owner != principal.ref and not principal.admin:
        raise ProtocolError(
            ErrorCode.PERMISSION_DENIED,
            f"{principal.ref} may not session:dispose here: {uri} is {session.record.owner}'s",
        )
    await host.sessions.dispose(session)
    await host.writes.drain()
