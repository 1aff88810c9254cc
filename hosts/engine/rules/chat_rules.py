"""The rules of a chat's actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..services import do_start_turn
from ..services.chats import do_move_queue, do_set_draft, do_set_pending_message, do_truncate_chat
from ..services.turns import do_confirm_tool_call, do_turn_cancelled
from .rule import ActionRule, Dispatch, flag_effect

CONTRIBUTOR_ONLY = "{type}: only the client a call names as its contributor may send it"


def _turn_started(d: Dispatch) -> str | None:
    do_start_turn(d.host, d.caller, d.chat, d.action)
    return None


async def _turn_cancelled(d: Dispatch) -> str | None:
    await do_turn_cancelled(d.host, d.caller, d.chat, d.action)
    return None


def _tool_call_confirmed(d: Dispatch) -> str | None:
    do_confirm_tool_call(d.host, d.caller, d.chat, d.action)
    return None


def _pending_message_set(d: Dispatch) -> str | None:
    do_set_pending_message(d.host, d.caller, d.chat, d.action)
    return None


def _queue_moved(d: Dispatch) -> str | None:
    do_move_queue(d.host, d.caller, d.chat, d.action)
    return None


def _draft(d: Dispatch) -> str | None:
    do_set_draft(d.host, d.caller, d.chat, d.action)
    return None


def _truncated(d: Dispatch) -> str | None:
    do_truncate_chat(d.host, d.caller, d.chat, d.action)
    return None


def _resume_refused(d: Dispatch) -> str:
    if d.chat.state().get("activeTurn"):
        return "Cannot resume while a turn is active."
    return "The session provider does not support turn resume."


class _Named(dict[str, Any]):
    """An action's fields for a refusal's words; one it lacks reads as None."""

    def __missing__(self, key: str) -> str:
        return "None"


def _words(template: str) -> Callable[[Dispatch], str]:
    def words(d: Dispatch) -> str:
        return template.format_map(_Named(d.action, uri=d.channel.uri))

    return words


def _no_input_request(d: Dispatch) -> str:
    return f"No open input request {d.action.get('requestId')} in this chat"


CHAT_RULES = (
    ActionRule(
        "chat/turnStarted",
        grant="chat:send",
        effect=_turn_started,
        signed=True,
        said_by_host=True,
    ),
    ActionRule(
        "chat/turnCancelled", grant="chat:cancel", effect=_turn_cancelled, said_by_host=True
    ),
    ActionRule("chat/toolCallConfirmed", grant="chat:tool", effect=_tool_call_confirmed),
    ActionRule(
        "chat/pendingMessageSet", grant="chat:send", effect=_pending_message_set, signed=True
    ),
    ActionRule(
        "chat/pendingMessageRemoved", grant="chat:send", effect=_queue_moved, said_by_host=True
    ),
    ActionRule("chat/queuedMessagesReordered", grant="chat:send", effect=_queue_moved),
    ActionRule("chat/draftChanged", grant="chat:draft", effect=_draft),
    ActionRule(
        "chat/isReadChanged",
        grant="chat:mark",
        effect=flag_effect("isRead"),
        unknown_target="Only a known chat can change its read state.",
        said_by_host=True,
    ),
    ActionRule(
        "chat/isArchivedChanged",
        grant="chat:mark",
        effect=flag_effect("isArchived"),
        unknown_target="Only a known independently manageable non-default chat can be archived.",
    ),
    ActionRule("chat/truncated", grant="chat:truncate", effect=_truncated),
    # Moments this host's backends never have, refused in words.
    ActionRule("chat/turnResume", refusal=_resume_refused, not_yet=True),
    ActionRule(
        "chat/toolCallComplete", refusal=_words(CONTRIBUTOR_ONLY), not_yet=True, said_by_host=True
    ),
    ActionRule(
        "chat/toolCallContentChanged",
        refusal=_words(CONTRIBUTOR_ONLY),
        not_yet=True,
        said_by_host=True,
    ),
    ActionRule("chat/inputAnswerChanged", refusal=_no_input_request, not_yet=True),
    ActionRule("chat/inputCompleted", refusal=_no_input_request, not_yet=True),
    ActionRule(
        "chat/toolCallResultConfirmed",
        refusal=_words("Tool call {toolCallId} has no result waiting for confirmation"),
        not_yet=True,
    ),
    # VS Code's host refuses these in its own words whatever they name.
    ActionRule(
        "chat/workingDirectorySet", refusal=_words("Unsupported action: {type}"), by_design=True
    ),
    ActionRule(
        "chat/workingDirectoryRemoved", refusal=_words("Unsupported action: {type}"), by_design=True
    ),
    # Said by this host as a turn runs.
    *(
        ActionRule(t, said_by_host=True)
        for t in (
            "chat/responsePart",
            "chat/delta",
            "chat/reasoning",
            "chat/toolCallStart",
            "chat/toolCallDelta",
            "chat/toolCallReady",
            "chat/usage",
            "chat/turnComplete",
            "chat/error",
            "chat/turnsLoaded",
            "chat/movableChanged",
        )
    ),
)
