"""What a client's action on a session's or a chat's channel does beyond its reducer.

Each handler either says the action (with the client's origin) and does what follows from it,
or returns why it is refused; the dispatch pipeline turns that reason into a refusal envelope.
The two tables are what this host serves; `coverage.py` reads them for the README.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sessions import LiveChat, LiveSession

log = logging.getLogger("ahpd.sessions")

Say = Callable[[], None]
SessionHandler = Callable[["LiveSession", dict[str, Any], Say], "str | None"]
ChatHandler = Callable[["LiveChat", dict[str, Any], Say], "str | None"]


def session_action(session: LiveSession, action: dict[str, Any], say: Say) -> str | None:
    handler = SESSION_HANDLERS.get(action["type"])
    if handler is None:
        return f"{action['type']} is not supported by this host yet"
    return handler(session, action, say)


def chat_action(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    handler = CHAT_HANDLERS.get(action["type"])
    if handler is None:
        return f"{action['type']} is not supported by this host yet"
    return handler(chat, action, say)


# -- session -------------------------------------------------------------------------------


def _title(session: LiveSession, action: dict[str, Any], say: Say) -> str | None:
    if not isinstance(action.get("title"), str):
        return "session/titleChanged: title must be a string"
    say()
    session.record.title = action["title"]
    session.service.touch(session)
    return None


def _session_flag(key: str) -> SessionHandler:
    def handle(session: LiveSession, action: dict[str, Any], say: Say) -> str | None:
        if not isinstance(action.get(key), bool):
            return f"{action['type']}: {key} must be a boolean"
        say()
        setattr(session.record, "is_read" if key == "isRead" else "is_archived", action[key])
        session.service.touch(session)
        return None

    return handle


def _active_client_set(session: LiveSession, action: dict[str, Any], say: Say) -> str | None:
    client = action.get("activeClient")
    if not isinstance(client, dict) or not isinstance(client.get("tools", []), list):
        return "session/activeClientSet: activeClient must be an object with a tools list"
    say()
    return None


def _active_client_removed(session: LiveSession, action: dict[str, Any], say: Say) -> str | None:
    if not isinstance(action.get("clientId"), str):
        return "session/activeClientRemoved: clientId must be a string"
    say()
    return None


def _session_config(session: LiveSession, action: dict[str, Any], say: Say) -> str | None:
    if not isinstance(action.get("config"), dict):
        return "session/configChanged: config must be an object"
    say()
    session.record.config = dict(session.channel.state["config"]["values"])
    session.service.save_session(session)
    return None


SESSION_HANDLERS: dict[str, SessionHandler] = {
    "session/titleChanged": _title,
    "session/isReadChanged": _session_flag("isRead"),
    "session/isArchivedChanged": _session_flag("isArchived"),
    "session/activeClientSet": _active_client_set,
    "session/activeClientRemoved": _active_client_removed,
    "session/configChanged": _session_config,
}


# -- chat ----------------------------------------------------------------------------------


def _turn_started(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    message = action.get("message")
    if not isinstance(action.get("turnId"), str) or not action["turnId"]:
        return "chat/turnStarted: turnId must be a non-empty string"
    if not isinstance(message, dict) or not isinstance(message.get("text"), str):
        return "chat/turnStarted: message must be a Message with a text"
    if (message.get("origin") or {}).get("kind") != "user":
        return "chat/turnStarted: a client may only send a message whose origin is the user"
    if not isinstance(action.get("startedAt"), str):
        return "chat/turnStarted: startedAt must be an ISO-8601 string"
    # A stopped turn no longer runs, for every client, even while its backend lets it go.
    if chat.busy:
        return "A turn is already running in this chat: queue the message instead."
    say()
    chat.session.service.turn_began(chat)
    chat.session.service.start_turn(chat, action)
    return None


def _turn_cancelled(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    if not isinstance(action.get("turnId"), str):
        return "chat/turnCancelled: turnId must be a string"
    if not isinstance(action.get("duration"), int | float):
        return "chat/turnCancelled: duration is required"
    say()
    runner = chat.runner
    if runner is not None and runner.turn_id == action["turnId"]:
        chat.session.service.stop_turn(chat, said=True)
    return None


def _tool_call_confirmed(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    runner = chat.runner
    call_id = str(action.get("toolCallId"))
    if (
        runner is None
        or runner.turn_id != action.get("turnId")
        or runner.calls.get(call_id) != "pending-confirmation"
    ):
        return f"Tool call {call_id} is not waiting for confirmation"
    if not isinstance(action.get("approved"), bool):
        return "chat/toolCallConfirmed: approved must be a boolean"
    say()
    runner.answer(call_id, action["approved"], action.get("selectedOptionId"))
    return None


def _pending_message_set(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    if action.get("kind") not in ("queued", "steering") or not isinstance(action.get("id"), str):
        return "chat/pendingMessageSet: kind must be queued or steering, with an id"
    message = action.get("message")
    if not isinstance(message, dict) or (message.get("origin") or {}).get("kind") != "user":
        return "chat/pendingMessageSet: message must be the user's"
    if not isinstance(message.get("text"), str):
        return "chat/pendingMessageSet: message must have a text"
    held = chat.state().get("steeringMessage")
    if action["kind"] == "steering" and held and held.get("id") == action["id"]:
        if held.get("message") != message:
            return "Cannot change a steering message while it is being processed."
    say()
    if action["kind"] == "steering":
        chat.session.service.steer(chat)
    else:
        chat.session.service.take_queued(chat)
    return None


def _queue_moved(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    say()
    chat.session.service.take_queued(chat)
    return None


def _draft(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    say()
    chat.record.draft = chat.state().get("draft")
    chat.session.service.save_chat(chat)
    return None


def _chat_flag(key: str) -> ChatHandler:
    def handle(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
        if key == "isArchived" and chat.record.uri == chat.session.record.default_chat:
            return "Only a known independently manageable non-default chat can be archived."
        if not isinstance(action.get(key), bool):
            return f"{action['type']}: {key} must be a boolean"
        say()
        setattr(chat.record, "is_read" if key == "isRead" else "is_archived", action[key])
        chat.session.service.save_chat(chat)
        chat.session.service.chat_row_moved(chat)
        return None

    return handle


def _truncated(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
    turn_id = action.get("turnId")
    if turn_id is not None and not isinstance(turn_id, str):
        return "chat/truncated: turnId must be a string"
    if chat.busy:
        return "Cannot truncate while a turn is active; stop it first."
    say()
    # Served as a rewind: the kept turns are the conversation from here on, for every client,
    # in the record and for the backend, which is opened again on them at the next turn.
    chat.session.service.rewind(chat)
    return None


def _refused(reason: Callable[[LiveChat, dict[str, Any]], str]) -> ChatHandler:
    """A client action this host's backends never have a moment for, refused in words."""

    def handle(chat: LiveChat, action: dict[str, Any], say: Say) -> str | None:
        return reason(chat, action)

    return handle


CHAT_HANDLERS: dict[str, ChatHandler] = {
    "chat/turnStarted": _turn_started,
    "chat/turnCancelled": _turn_cancelled,
    "chat/toolCallConfirmed": _tool_call_confirmed,
    "chat/pendingMessageSet": _pending_message_set,
    "chat/pendingMessageRemoved": _queue_moved,
    "chat/queuedMessagesReordered": _queue_moved,
    "chat/draftChanged": _draft,
    "chat/isReadChanged": _chat_flag("isRead"),
    "chat/isArchivedChanged": _chat_flag("isArchived"),
    "chat/truncated": _truncated,
    "chat/turnResume": _refused(
        lambda chat, action: (
            "Cannot resume while a turn is active."
            if chat.state().get("activeTurn")
            else "The session provider does not support turn resume."
        )
    ),
    "chat/toolCallComplete": _refused(
        lambda chat, action: (
            f"{action['type']}: only the client a call names as its contributor may send it"
        )
    ),
    "chat/toolCallContentChanged": _refused(
        lambda chat, action: (
            f"{action['type']}: only the client a call names as its contributor may send it"
        )
    ),
    "chat/inputAnswerChanged": _refused(
        lambda chat, action: f"No open input request {action.get('requestId')} in this chat"
    ),
    "chat/inputCompleted": _refused(
        lambda chat, action: f"No open input request {action.get('requestId')} in this chat"
    ),
    "chat/toolCallResultConfirmed": _refused(
        lambda chat, action: (
            f"Tool call {action.get('toolCallId')} has no result waiting for confirmation"
        )
    ),
}

#: Client actions a chat takes and acts on (the rest of CHAT_HANDLERS are refusals in words).
CHAT_SERVED = frozenset(CHAT_HANDLERS) - {
    "chat/turnResume",
    "chat/toolCallComplete",
    "chat/toolCallContentChanged",
    "chat/inputAnswerChanged",
    "chat/inputCompleted",
    "chat/toolCallResultConfirmed",
}
