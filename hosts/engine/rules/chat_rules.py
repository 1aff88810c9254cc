"""The rules of a chat's actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..services import do_start_turn
from ..services.chats import do_move_queue, do_set_draft, do_set_pending_message, do_truncate_chat
from ..services.client_tools import (
    do_complete_client_tool_call,
    do_confirm_tool_result,
    do_stream_client_tool_call,
)
from ..services.questions import do_change_input_answer, do_complete_input
from ..services.turns import do_confirm_tool_call, do_resume_turn, do_turn_cancelled
from .rule import ActionRule, Dispatch, flag_effect


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


def _turn_resumed(d: Dispatch) -> str | None:
    return do_resume_turn(d.host, d.caller, d.chat, d.action)


class _Named(dict[str, Any]):
    """An action's fields for a refusal's words; one it lacks reads as None."""

    def __missing__(self, key: str) -> str:
        return "None"


def _words(template: str) -> Callable[[Dispatch], str]:
    def words(d: Dispatch) -> str:
        return template.format_map(_Named(d.action, uri=d.channel.uri))

    return words


def _input_answer_changed(d: Dispatch) -> str | None:
    return do_change_input_answer(d.host, d.caller, d.chat, d.action)


def _input_completed(d: Dispatch) -> str | None:
    return do_complete_input(d.host, d.caller, d.chat, d.action)


def _tool_call_complete(d: Dispatch) -> str | None:
    return do_complete_client_tool_call(d.host, d.caller, d.chat, d.action)


def _tool_call_content_changed(d: Dispatch) -> str | None:
    return do_stream_client_tool_call(d.host, d.caller, d.chat, d.action)


def _tool_call_result_confirmed(d: Dispatch) -> str | None:
    return do_confirm_tool_result(d.host, d.caller, d.chat, d.action)


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
    ActionRule("chat/turnResume", grant="chat:send", effect=_turn_resumed),
    # A client's tools are the client's to run (sessions/client_tool_calls.py).
    ActionRule(
        "chat/toolCallComplete", grant="chat:tool", effect=_tool_call_complete, said_by_host=True
    ),
    ActionRule(
        "chat/toolCallContentChanged",
        grant="chat:tool",
        effect=_tool_call_content_changed,
        said_by_host=True,
    ),
    ActionRule(
        "chat/toolCallResultConfirmed", grant="chat:tool", effect=_tool_call_result_confirmed
    ),
    # Questions a turn puts to a person (sessions/questions.py).
    ActionRule("chat/inputAnswerChanged", grant="chat:answer", effect=_input_answer_changed),
    ActionRule("chat/inputCompleted", grant="chat:answer", effect=_input_completed),
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
            "chat/toolCallAuthRequired",
            "chat/toolCallAuthResolved",
            "chat/usage",
            "chat/inputRequested",
            "chat/turnComplete",
            "chat/error",
            "chat/turnsLoaded",
            "chat/movableChanged",
            # What a turn waits on before it can run: its agent starting (opening.py).
            "chat/activityChanged",
            # What the chat's agent runs in the background (sessions/agent_reports.py).
            "chat/backgroundWorkSet",
            "chat/backgroundWorkRemoved",
        )
    ),
)
