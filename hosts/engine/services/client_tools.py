"""A client running a tool call the agent handed it (sessions/client_tool_calls.py): its
streamed content, its completion, a person's confirmation of its result, and its leaving.

Only the client a call names as its contributor may stream into it or complete it, wherever
the chat holds the call (a call a stop ended included); one for a call the chat does not hold
is said, as VS Code's host says every completion, and reduces to nothing.
"""

from __future__ import annotations

from typing import Any

from ..host import Host
from ..sessions import LiveChat
from ..sessions.client_tool_calls import contributing_client, held_call
from .caller import Caller

TOOL = "chat:tool"
CONTRIBUTOR_ONLY = "{type}: only the client a call names as its contributor may send it"


def contributor_refusal(caller: Caller, chat: LiveChat, action: dict[str, Any]) -> str | None:
    """Why the caller may not stream into or complete the call the action names: it is not
    the client the call names as its contributor (a call no client contributes names none).
    None for a call the chat does not hold."""
    call = held_call(chat.state(), action["turnId"], action["toolCallId"])
    if call is None:
        return None
    client_id = caller.origin["clientId"] if caller.origin is not None else None
    if client_id is None or contributing_client(call) != client_id:
        return CONTRIBUTOR_ONLY.format(type=action["type"])
    return None


def do_stream_client_tool_call(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> str | None:
    """A client's chat/toolCallContentChanged: what its running call shows so far, said to
    every client of the chat with its origin and folded into the call."""
    caller.may_in(chat.session, TOOL)
    if (reason := contributor_refusal(caller, chat, action)) is not None:
        return reason
    caller.say(host, chat.channel, action)
    return None


def do_complete_client_tool_call(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> str | None:
    """A client's chat/toolCallComplete: said to every client of the chat with its origin, and
    then handed to the agent waiting on the call, or held for a person where the client asked
    to have its result confirmed."""
    caller.may_in(chat.session, TOOL)
    if (reason := contributor_refusal(caller, chat, action)) is not None:
        return reason
    caller.say(host, chat.channel, action)
    runner = chat.runner
    if runner is not None and runner.turn_id == action["turnId"]:
        runner.client_calls.completed(
            action["toolCallId"],
            action["result"],
            confirm=bool(action.get("requiresResultConfirmation")),
        )
    return None


def do_confirm_tool_result(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> str | None:
    """A person's chat/toolCallResultConfirmed: said, and the result the client gave goes to
    the agent, or, denied, goes as a failure."""
    caller.may_in(chat.session, TOOL)
    runner = chat.runner
    call_id = action["toolCallId"]
    if (
        runner is None
        or runner.turn_id != action["turnId"]
        or not runner.client_calls.awaiting_confirmation(call_id)
    ):
        return f"Tool call {call_id} has no result waiting for confirmation"
    caller.say(host, chat.channel, action)
    runner.client_calls.result_confirmed(call_id, action["approved"])
    return None
