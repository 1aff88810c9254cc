"""createChat, disposeChat, fetchTurns and completions: a session's chats."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ...protocol.validation import completion_request, required_str
from .. import access
from ..connection import Connection
from ..host import Host
from ..services import do_create_chat, do_dispose_chat, do_fetch_turns
from ..services.caller import chat_of
from ..services.chat_moves import do_move_chat
from ..sessions import LiveChat
from ..sessions.records import file_path
from .common import caller_of, on_channel

#: Files offered for an @ when nothing narrows the list.
FILE_COMPLETIONS = 50
#: Files looked at, at most, for one @ (a working folder may be a whole disk).
FILE_SCAN_LIMIT = 20_000


async def create_chat(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    session_uri = required_str(params, "createChat", "channel")
    uri = required_str(params, "createChat", "chat")
    # A fork reads its source's turns; the default chat may be named again.
    await host.sessions.wake_session(session_uri)
    do_create_chat(
        host,
        caller_of(conn),
        session_uri,
        uri,
        title=params.get("title"),
        source=params.get("source"),
        message=params.get("initialMessage"),
    )
    return None


dispose_chat = on_channel("disposeChat", do_dispose_chat)


async def fetch_turns(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "fetchTurns", "channel")
    do_fetch_turns(host, caller_of(conn), uri, params.get("cursor"))
    return {}


async def move_chat(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "moveChat", "channel")
    await host.sessions.wake(uri)
    session = await do_move_chat(host, caller_of(conn), uri, params.get("destination"))
    return {"session": session}


async def completions(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "completions", "channel")
    chat = chat_of(host, uri)
    # What is offered (the agent's commands, the session's files) is for who may send there.
    access.require(conn.principal, chat.session.record, "chat:send")
    text, offset = completion_request(params)
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
    items = []
    for command in chat.agent_commands():
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
