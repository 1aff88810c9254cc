"""Making and disposing a session's chats."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.turn_windows import page_before
from ...protocol.validation import chat_source, checked_uri, user_message_problem
from ..host import Host
from ..sessions import LiveChat, LiveSession
from .caller import Caller, chat_of, session_of
from .turns import do_send_message, room_for_agent


def do_create_chat(
    host: Host,
    caller: Caller,
    session_uri: str,
    uri: str,
    *,
    title: Any = None,
    source: Any = None,
    message: Any = None,
) -> LiveChat:
    """A chat beside the session's default one: fresh, a fork (the turns through the one
    named, as visible history) or a side chat; a first message starts its first turn.

    The default chat asked for again makes nothing (its first message, if idle, is its turn).
    """
    caller.may("chat:create")
    session = session_of(host, session_uri)
    caller.may_in(session, "chat:create")
    if not uri.startswith("ahp-chat:"):
        raise invalid_params(f"Chat URI must use the ahp-chat scheme: {uri}")
    checked_uri(uri, "createChat: chat")
    if message is not None:
        # A first message is a message sent: it needs what any other does.
        caller.may_in(session, "chat:send")
        if (reason := user_message_problem(message, "createChat: initialMessage")) is not None:
            raise invalid_params(reason)
    if uri == session.record.default_chat:
        chat = session.chats[uri]
        if message is not None and chat.runner is None:
            do_send_message(host, caller, chat, message, method="createChat")
        return chat
    if host.sessions.taken(uri):
        raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"Chat already exists: {uri}")
    if message is not None:
        # Refused before the chat is made: its first turn would start an agent past the cap.
        room_for_agent(host, session.record.owner, session.record.provider)
    source = chat_source(source)
    title = title.strip() if isinstance(title, str) else ""
    turns: list[dict[str, Any]] = []
    origin: dict[str, Any] | None = None
    if source is not None:
        turns, origin, title = _from_source(session, source, title)
    chat = host.sessions.add_chat(session, uri, title=title, turns=turns, origin=origin)
    if message is not None:
        do_send_message(host, caller, chat, message, method="createChat")
    return chat


def do_fetch_turns(host: Host, caller: Caller, uri: str, cursor: Any = None) -> None:
    """The page of turns older than a snapshot's `turnsNextCursor`, said on the chat's channel
    as chat/turnsLoaded before the request is answered, so every client watching the chat
    gets it. With no cursor there is nothing older to give: a window's cursor is the only
    record of where it ends."""
    chat = chat_of(host, uri)
    caller.may_in(chat.session, "chat:turns")
    if cursor is None:
        chat.say({"type": "chat/turnsLoaded", "turns": []})
        return
    turns = [turn for turn in chat.state().get("turns", []) if isinstance(turn, dict)]
    page, next_cursor = page_before(turns, cursor)
    action: dict[str, Any] = {"type": "chat/turnsLoaded", "turns": page}
    if next_cursor is not None:
        action["turnsNextCursor"] = next_cursor
    chat.say(action)


def _from_source(
    session: LiveSession, source: dict[str, Any], title: str
) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    origin_chat = session.chats.get(str(source.get("chat")))
    if origin_chat is None:
        raise invalid_params(
            f"createChat: source chat is not in this session: {source.get('chat')}"
        )
    held = origin_chat.state().get("turns", [])
    ids = [t["id"] for t in held]
    if source.get("turnId") not in ids:
        raise invalid_params(f"createChat: source turn not found: {source.get('turnId')}")
    origin = {"kind": source["kind"], "chat": origin_chat.record.uri, "turnId": source["turnId"]}
    if source["kind"] != "fork":
        return [], origin, title  # a side chat copies nothing
    if not title:
        source_title = origin_chat.state().get("title") or session.channel.state["title"]
        title = f"Forked: {source_title.removeprefix('Forked: ')}"
    return held[: ids.index(source["turnId"]) + 1], origin, title


async def do_dispose_chat(host: Host, caller: Caller, uri: str) -> None:
    """Close a chat; the default chat, and a chat nobody has, are answered the same with
    nothing removed."""
    caller.may("chat:dispose")
    chat = host.sessions.chat(uri)
    if chat is None or chat.is_default:
        return
    caller.may_in(chat.session, "chat:dispose")
    if (moving := host.sessions.moving_refusal(chat.record.uri)) is not None:
        raise ProtocolError(ErrorCode.CONFLICT, moving)
    await host.sessions.remove_chat(chat)


# -- what a client changes of a chat (its rules: rules/chat_rules.py) -------------------------


def do_set_draft(host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]) -> None:
    """A client's chat/draftChanged: said, and the draft kept."""
    caller.say(host, chat.channel, action)
    chat.record.draft = chat.state().get("draft")
    host.sessions.save_chat(chat)


def do_truncate_chat(host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]) -> None:
    """A client's chat/truncated, served as a rewind: the kept turns are the conversation from
    here on, for every client, in the record and for the backend (opened again on them at the
    next turn). -32602 in words while a turn runs."""
    if chat.busy:
        raise invalid_params("Cannot truncate while a turn is active; stop it first.")
    caller.say(host, chat.channel, action)
    host.turns.rewind(chat)


def do_set_pending_message(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> None:
    """A client's chat/pendingMessageSet: a steering message, or one queued. Taken up at once
    as a turn where the chat is idle, so refused, before it is said, where that turn could not
    start (the owner's agent cap)."""
    held = chat.state().get("steeringMessage")
    steering = action["kind"] == "steering"
    if steering and held and held.get("id") == action["id"]:
        if held.get("message") != action["message"]:
            raise invalid_params("Cannot change a steering message while it is being processed.")
    if chat.idle:
        room_for_agent(host, chat.session.record.owner, chat.session.record.provider, chat)
    caller.say(host, chat.channel, action)
    if steering:
        host.turns.steer(chat)
    else:
        host.turns.take_queued(chat)


def do_move_queue(host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]) -> None:
    """A client's chat/pendingMessageRemoved or queuedMessagesReordered: said, and the queue's
    head taken up where the chat is idle."""
    caller.say(host, chat.channel, action)
    host.turns.take_queued(chat)
