"""What a client's action on a session's or a chat's channel does beyond its reducer.

Each handler either says the action (with the client's origin) and does what follows from it,
or returns why it is refused; the dispatch pipeline turns that reason into a refusal envelope.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import Connection
    from .host import Host
    from .sessions import LiveChat, LiveSession

log = logging.getLogger("ahpd.sessions")

Said = Callable[[], None]
NOT_YET = "{type} is not supported by this host yet"


def session_action(
    host: Host, conn: Connection, session: LiveSession, action: dict[str, Any], say: Said
) -> str | None:
    kind = action["type"]
    record = session.record
    service = session.service
    if kind == "session/titleChanged":
        if not isinstance(action.get("title"), str):
            return "session/titleChanged: title must be a string"
        say()
        record.title = action["title"]
        service._touch(session)
        return None
    if kind in ("session/isReadChanged", "session/isArchivedChanged"):
        key = "isRead" if kind == "session/isReadChanged" else "isArchived"
        if not isinstance(action.get(key), bool):
            return f"{kind}: {key} must be a boolean"
        say()
        if key == "isRead":
            record.is_read = action[key]
        else:
            record.is_archived = action[key]
        service._touch(session)
        return None
    if kind == "session/activeClientSet":
        client = action.get("activeClient")
        if not isinstance(client, dict) or not isinstance(client.get("tools", []), list):
            return "session/activeClientSet: activeClient must be an object with a tools list"
        say()
        return None
    if kind == "session/activeClientRemoved":
        if not isinstance(action.get("clientId"), str):
            return "session/activeClientRemoved: clientId must be a string"
        say()
        return None
    if kind == "session/configChanged":
        if not isinstance(action.get("config"), dict):
            return "session/configChanged: config must be an object"
        say()
        record.config = dict(session.channel.state["config"]["values"])
        service.save_session(session)
        return None
    return NOT_YET.format(type=kind)


def chat_action(
    host: Host, conn: Connection, chat: LiveChat, action: dict[str, Any], say: Said
) -> str | None:
    kind = action["type"]
    service = chat.session.service
    state = chat.state()
    if kind == "chat/turnStarted":
        message = action.get("message")
        if not isinstance(action.get("turnId"), str) or not action["turnId"]:
            return "chat/turnStarted: turnId must be a non-empty string"
        if not isinstance(message, dict) or not isinstance(message.get("text"), str):
            return "chat/turnStarted: message must be a Message with a text"
        if (message.get("origin") or {}).get("kind") != "user":
            return "chat/turnStarted: a client may only send a message whose origin is the user"
        if not isinstance(action.get("startedAt"), str):
            return "chat/turnStarted: startedAt must be an ISO-8601 string"
        if chat.runner is not None:
            return "A turn is already running in this chat: queue the message instead."
        say()
        service.turn_began(chat)
        service.start_turn(chat, action)
        return None
    if kind == "chat/turnCancelled":
        if not isinstance(action.get("turnId"), str):
            return "chat/turnCancelled: turnId must be a string"
        if not isinstance(action.get("duration"), int | float):
            return "chat/turnCancelled: duration is required"
        say()
        runner = chat.runner
        if runner is not None and runner.turn_id == action["turnId"]:
            # The stop ends the turn for every client at once; then the backend is told.
            runner.stop()
            if chat.agent_chat is not None:
                asyncio.get_running_loop().create_task(_cancel_backend(chat))
        return None
    if kind == "chat/toolCallConfirmed":
        runner = chat.runner
        call_id = action.get("toolCallId")
        if (
            runner is None
            or runner.turn_id != action.get("turnId")
            or runner.calls.get(str(call_id)) != "pending-confirmation"
        ):
            return f"Tool call {call_id} is not waiting for confirmation"
        if not isinstance(action.get("approved"), bool):
            return "chat/toolCallConfirmed: approved must be a boolean"
        say()
        runner.answer(str(call_id), action["approved"], action.get("selectedOptionId"))
        return None
    if kind == "chat/pendingMessageSet":
        if action.get("kind") == "steering":
            return "The session provider does not support steering messages."
        if action.get("kind") != "queued" or not isinstance(action.get("id"), str):
            return "chat/pendingMessageSet: kind must be queued or steering, with an id"
        message = action.get("message")
        if not isinstance(message, dict) or (message.get("origin") or {}).get("kind") != "user":
            return "chat/pendingMessageSet: message must be the user's"
        say()
        service._take_queued(chat)
        return None
    if kind in ("chat/pendingMessageRemoved", "chat/queuedMessagesReordered"):
        say()
        service._take_queued(chat)
        return None
    if kind == "chat/draftChanged":
        say()
        chat.record.draft = chat.state().get("draft")
        service.save_chat(chat)
        return None
    if kind == "chat/isReadChanged":
        if not isinstance(action.get("isRead"), bool):
            return "chat/isReadChanged: isRead must be a boolean"
        say()
        chat.record.is_read = action["isRead"]
        service.save_chat(chat)
        service._chat_row_moved(chat)
        return None
    if kind == "chat/isArchivedChanged":
        if chat.record.uri == chat.session.record.default_chat:
            return "Only a known independently manageable non-default chat can be archived."
        if not isinstance(action.get("isArchived"), bool):
            return "chat/isArchivedChanged: isArchived must be a boolean"
        say()
        chat.record.is_archived = action["isArchived"]
        service.save_chat(chat)
        service._chat_row_moved(chat)
        return None
    if kind == "chat/turnResume":
        if state.get("activeTurn"):
            return "Cannot resume while a turn is active."
        return "The session provider does not support turn resume."
    if kind in ("chat/toolCallComplete", "chat/toolCallContentChanged"):
        return f"{kind}: only the client a call names as its contributor may send it"
    if kind in ("chat/inputAnswerChanged", "chat/inputCompleted"):
        return f"No open input request {action.get('requestId')} in this chat"
    if kind == "chat/toolCallResultConfirmed":
        return f"Tool call {action.get('toolCallId')} has no result waiting for confirmation"
    return NOT_YET.format(type=kind)


async def _cancel_backend(chat: LiveChat) -> None:
    agent_chat = chat.agent_chat
    if agent_chat is None:
        return
    try:
        await agent_chat.cancel()
    except Exception:
        log.exception("cancelling the backend of %s failed", chat.record.uri)
