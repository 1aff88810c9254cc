"""createChat, disposeChat, fetchTurns and completions: a session's chats."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from .params import required_str

if TYPE_CHECKING:
    from ..connection import Connection
    from ..host import Host
    from ..sessions import LiveChat

#: Files offered for an @ when nothing narrows the list.
FILE_COMPLETIONS = 50
#: Files looked at, at most, for one @ (a working folder may be a whole disk).
FILE_SCAN_LIMIT = 20_000


def chat_of(host: Host, uri: str) -> LiveChat:
    chat = host.sessions.chats.get(uri)
    if chat is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Resource not found: {uri}")
    return chat


async def create_chat(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    session_uri = required_str(params, "createChat", "channel")
    uri = required_str(params, "createChat", "chat")
    session = host.sessions.sessions.get(session_uri)
    if session is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {session_uri}")
    if not uri.startswith("ahp-chat:"):
        raise invalid_params(f"Chat URI must use the ahp-chat scheme: {uri}")
    message = params.get("initialMessage")
    if message is not None and (
        not isinstance(message, dict)
        or not isinstance(message.get("text"), str)
        or (message.get("origin") or {}).get("kind") != "user"
    ):
        raise invalid_params("createChat: initialMessage must be the user's Message")
    if message is not None:
        # A first message is a message sent: it needs what any other does.
        await host.require(conn, "chat:send")
        message = {
            **message,
            "_meta": {**(message.get("_meta") or {}), "ahpd.sender": conn.principal.ref},
        }
    if uri == session.record.default_chat:
        # The default chat asked for again: nothing made, or its first message as its turn.
        chat = session.chats[uri]
        if message is not None and chat.runner is None:
            host.sessions.start_host_turn(chat, message)
        return None
    if uri in host.channels:
        raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"Chat already exists: {uri}")
    source = params.get("source")
    turns: list[dict[str, Any]] = []
    origin: dict[str, Any] | None = None
    title = params.get("title")
    title = title.strip() if isinstance(title, str) else ""
    if source is not None:
        if not isinstance(source, dict) or source.get("kind") not in ("fork", "sideChat"):
            raise invalid_params("createChat: source must be a fork or a sideChat")
        origin_chat = session.chats.get(str(source.get("chat")))
        if origin_chat is None:
            raise invalid_params(
                f"createChat: source chat is not in this session: {source.get('chat')}"
            )
        held = origin_chat.state().get("turns", [])
        ids = [t["id"] for t in held]
        if source.get("turnId") not in ids:
            raise invalid_params(f"createChat: source turn not found: {source.get('turnId')}")
        origin = {
            "kind": source["kind"],
            "chat": origin_chat.record.uri,
            "turnId": source["turnId"],
        }
        if source["kind"] == "fork":
            # A fork carries the turns through as visible history; a side chat copies nothing.
            turns = held[: ids.index(source["turnId"]) + 1]
            if not title:
                source_title = origin_chat.state().get("title") or session.channel.state["title"]
                title = f"Forked: {source_title.removeprefix('Forked: ')}"
    chat = host.sessions.add_chat(session, uri, title=title, turns=turns, origin=origin)
    if message is not None:
        host.sessions.start_host_turn(chat, message)
    return None


async def dispose_chat(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "disposeChat", "channel")
    chat = host.sessions.chats.get(uri)
    # The default chat, and a chat nobody has, are answered the same with nothing removed.
    if chat is None or uri == chat.session.record.default_chat:
        return None
    await host.sessions.remove_chat(chat)
    return None


async def fetch_turns(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "fetchTurns", "channel")
    chat = chat_of(host, uri)
    if params.get("cursor") is not None:
        # Snapshots here carry every turn and no turnsNextCursor, so no cursor was issued.
        raise invalid_params(f"fetchTurns: a cursor this host did not issue: {params['cursor']}")
    # Nothing older than what every snapshot already carries; said on the channel all the same
    # so every client watching the chat reads the same answer.
    host.emit(chat.channel, {"type": "chat/turnsLoaded", "turns": []})
    return {}


async def completions(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "completions", "channel")
    chat = chat_of(host, uri)
    text = params.get("text")
    offset = params.get("offset")
    if not isinstance(text, str):
        raise invalid_params("completions: text must be a string")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= len(text):
        raise invalid_params("completions: offset must be a position in text")
    if params.get("kind") != "userMessage":
        raise invalid_params("completions: kind must be userMessage")
    head = text[:offset]
    start = max(head.rfind(" "), head.rfind("\n")) + 1
    word = head[start:]
    if word.startswith("/") and start == 0:
        return {"items": _commands(chat, word[1:], start, offset)}
    if word.startswith("@"):
        # A walk of the working tree is disk work: off the loop every client shares.
        return {"items": await asyncio.to_thread(_files, chat, word[1:], start, offset)}
    return {"items": []}


def _commands(chat: LiveChat, typed: str, start: int, end: int) -> list[dict[str, Any]]:
    commands = getattr(chat.agent_chat, "commands", None) or []
    items = []
    for command in commands:
        name = str(command.get("name", ""))
        if not name.lower().startswith(typed.lower()):
            continue
        meta = {"command": name, "description": str(command.get("description", ""))}
        if command.get("hint"):
            meta["argumentHint"] = str(command["hint"])
        items.append(
            {
                "insertText": f"/{name} ",
                "rangeStart": start,
                "rangeEnd": end,
                # The reference client drops a completion whose attachment names no command.
                "attachment": {"type": "simple", "label": f"/{name}", "_meta": meta},
            }
        )
    return items


def _files(chat: LiveChat, typed: str, start: int, end: int) -> list[dict[str, Any]]:
    from ..records import file_path

    items: list[dict[str, Any]] = []
    seen = 0
    for root_uri in chat.session.record.working_directories:
        root = file_path(root_uri)
        for directory, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            seen += len(filenames)
            if seen > FILE_SCAN_LIMIT:
                return items
            for name in sorted(filenames):
                path = Path(directory) / name
                relative = path.relative_to(root).as_posix()
                if typed.lower() not in relative.lower():
                    continue
                items.append(
                    {
                        "insertText": f"@{relative} ",
                        "rangeStart": start,
                        "rangeEnd": end,
                        "attachment": {"type": "resource", "label": relative, "uri": path.as_uri()},
                    }
                )
                if len(items) >= FILE_COMPLETIONS:
                    return items
    return items
