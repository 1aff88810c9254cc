"""VS Code's debug-log requests (debug_logs.py): `vscode/collectAgentHostDebugLogs` and
`vscode/readAgentHostDebugLogsChunk`, to a principal holding diagnostics:read, and a session's
record only to one who may read that session."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from ...protocol import jsonrpc
from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.uris import ROOT_URI
from .. import access
from ..connection import Connection
from ..debug_logs import EVENTS, HOST_LOG, KINDS
from ..host import Host
from ..sessions.live_session import LiveChat, LiveSession

COLLECT = "vscode/collectAgentHostDebugLogs"
READ_CHUNK = "vscode/readAgentHostDebugLogsChunk"


async def collect_debug_logs(host: Host, conn: Connection, params: dict[str, Any]) -> Any:
    kind = params.get("kind")
    if kind not in KINDS:
        raise invalid_params(f"{COLLECT}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    token = params.get("progressToken")
    if token is not None and (not isinstance(token, str) or not token):
        raise invalid_params(f"{COLLECT}: progressToken must be a non-empty string")
    if token is not None and host.debug_logs.token_in_use(token):
        raise invalid_params(f"{COLLECT}: progressToken {token} is in use by a collection")
    session, chats = await _named(host, conn, params)
    entries = []
    if session is not None:
        entries.append((EVENTS, _events(session, chats)))
    entries.append((HOST_LOG, host.debug_logs.lines.text()))
    progress = None
    if token is not None:
        loop = asyncio.get_running_loop()

        def progress(done: int, total: int, path: str) -> None:
            frame = jsonrpc.notification_frame(
                "root/progress",
                {
                    "channel": ROOT_URI,
                    "progressToken": token,
                    "progress": done,
                    "total": total,
                    "message": f"Collected {path}",
                    "_meta": {"vscode.debugLogs": True},
                },
            )
            loop.call_soon_threadsafe(host.fanout.send, conn, frame)

    return await host.debug_logs.collect(entries, kind, token=token, progress=progress)


async def read_debug_logs_chunk(host: Host, conn: Connection, params: dict[str, Any]) -> Any:
    resource = params.get("resource")
    position = params.get("position")
    if not isinstance(resource, str) or not resource:
        raise invalid_params(f"{READ_CHUNK}: resource must be a non-empty string")
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise invalid_params(f"{READ_CHUNK}: position must be an integer of 0 or more")
    chunk = host.debug_logs.chunk(resource, position)
    if chunk is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"{resource} is no debug-log archive this host made (or it is gone)",
        )
    return chunk


async def _named(
    host: Host, conn: Connection, params: dict[str, Any]
) -> tuple[LiveSession | None, list[LiveChat]]:
    """The session (and its chats, or the one chat) a collection names, once the asker is
    found to may read it."""
    session_uri, chat_uri = params.get("session"), params.get("chat")
    for name, value in (("session", session_uri), ("chat", chat_uri)):
        if value is not None and (not isinstance(value, str) or not value):
            raise invalid_params(f"{COLLECT}: {name} must be a non-empty string")
    if session_uri is None and chat_uri is None:
        return None, []
    session: LiveSession | None = None
    chat: LiveChat | None = None
    if chat_uri is not None:
        await host.sessions.wake(chat_uri)
        chat = host.sessions.chat(chat_uri)
        if chat is None or (session_uri is not None and chat.session.uri != session_uri):
            raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Chat not found: {chat_uri}")
        session = chat.session
    else:
        assert session_uri is not None
        session = host.sessions.session(session_uri)
        if session is None:
            raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {session_uri}")
        await host.sessions.wake_session(session_uri)
    principal = await host.permissions.principal_now(conn)
    reason = access.refusal(principal, session.record, access.READ_SESSION)
    if reason is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)
    return session, [chat] if chat is not None else list(session.chats.values())


def _events(session: LiveSession, chats: list[LiveChat]) -> bytes:
    """The session's record, one event a line: the session, then each chat and its turns."""
    record = session.record
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "session": record.uri,
            "provider": record.provider,
            "title": record.title,
            "owner": record.owner,
            "scope": record.scope,
            "workingDirectories": list(record.working_directories),
            "createdMs": record.created_ms,
            "modifiedMs": record.modified_ms,
        }
    ]
    for chat in chats:
        lines.append({"type": "chat", "chat": chat.record.uri, "title": chat.record.title})
        for turn in chat.channel.state.get("turns", []):
            lines.append({"type": "turn", "chat": chat.record.uri, "turn": turn})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)
