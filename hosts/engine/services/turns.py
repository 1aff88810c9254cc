"""Sending messages and stopping turns."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.validation import text_message_problem, user_message_problem
from ..host import Host
from ..sessions import LiveChat
from ..sessions.local_commands import command_of
from ..sessions.pending import ends_resumable
from .caller import Caller, session_of, user_message, with_sender
from .terminals import must_be_sandboxed


def room_for_agent(
    host: Host, owner: str | None, provider: str, chat: LiveChat | None = None
) -> None:
    """-32009 in words naming the cap, where a turn sent to `chat` (None: a chat or a session
    about to be made) would start one agent more than its owner may run at once."""
    if (reason := host.running_agents.refusal(owner, provider, chat)) is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)


def do_start_turn(host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]) -> str:
    """A client's chat/turnStarted, said back as it sent it (signed by the dispatch, as its
    rule says), and run.

    A turn sent while another runs is taken: it replaces the running one in every client's
    state and runs once the work in front of it is done.
    """
    caller.may_in(chat.session, "chat:send")
    room_for_turn(host, caller, chat, str(action["message"].get("text", "")))
    return host.turns.begin(chat, action, origin=caller.origin, sender=caller.sender)


def room_for_turn(host: Host, caller: Caller, chat: LiveChat, text: str) -> None:
    """A ! command runs in a shell (only in a sandbox, or for a host-wide admin); anything
    else needs room for one more agent of the session owner's."""
    if command_of(text) is not None:
        must_be_sandboxed(host, caller, "run a ! command")
    else:
        room_for_agent(host, chat.session.record.owner, chat.session.record.provider, chat)


def do_send_message(
    host: Host, caller: Caller, chat: LiveChat, message: Any, *, method: str
) -> str:
    """A message the caller sends to a chat starts a turn there (a Message, or a plain text
    from the REST API); its turn's id."""
    caller.may_in(chat.session, "chat:send")
    if isinstance(message, str):
        if (reason := text_message_problem(message)) is not None:
            raise invalid_params(reason)
        message = user_message(message, caller)
    else:
        if (reason := user_message_problem(message, method)) is not None:
            raise invalid_params(reason)
        message = with_sender(message, caller.principal.ref)
    room_for_turn(host, caller, chat, str(message.get("text", "")))
    return host.turns.begin_message(chat, message)


def do_send_to_session(
    host: Host, caller: Caller, uri: str, message: Any, chat_uri: Any = None
) -> dict[str, Any]:
    """A message to a session's chat (its default one unless named)."""
    caller.may("chat:send")
    session = session_of(host, uri)
    caller.may_in(session, "chat:send")
    chat = session.chats.get(chat_uri or session.record.default_chat)
    if chat is None:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"No chat {chat_uri} in {uri}")
    turn_id = do_send_message(host, caller, chat, message, method="messages")
    return {"chat": chat.record.uri, "turnId": turn_id}


def do_cancel_turn(host: Host, caller: Caller, chat: LiveChat, *, said: bool = False) -> str | None:
    """Stop the chat's running turn for every client at once; its id, or None if none ran.

    `said`: the caller's own chat/turnCancelled has been said already.
    """
    caller.may_in(chat.session, "chat:cancel")
    return host.turns.stop(chat, said=said)


async def do_cancel_session(host: Host, caller: Caller, uri: str) -> dict[str, Any]:
    """Stop every turn running in a session, each stop committed before it is said."""
    caller.may("chat:cancel")
    session = session_of(host, uri)
    caller.may_in(session, "chat:cancel")
    stopped = []
    for chat in list(session.chats.values()):
        if (turn_id := await host.turns.stop_kept(chat)) is not None:
            stopped.append(turn_id)
            await audit_cancel(host, caller, chat, turn_id)
    if not stopped:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"No turn is running in {uri}")
    return {"cancelled": stopped}


async def do_turn_cancelled(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> None:
    """A client's chat/turnCancelled: a running turn's end committed before it is said (a
    client's stop too), then stopped; one not running is said and nothing more. A resumed
    turn's stop says the time it ran across both its runs, which its client cannot know."""
    runner = chat.runner
    running = runner is not None and runner.turn_id == action["turnId"] and not runner.ended
    if running and runner is not None and runner.resumed:
        action = {**action, "duration": runner.duration()}
    if running:
        await host.turns.commit_ending(chat, action)
        await audit_cancel(host, caller, chat, action["turnId"])
    caller.say(host, chat.channel, action)
    if running and chat.runner is runner:
        do_cancel_turn(host, caller, chat, said=True)


async def audit_cancel(host: Host, caller: Caller, chat: LiveChat, turn_id: str) -> None:
    """Someone else's turn stopped is on the audit trail (one's own is not)."""
    owner = chat.session.record.owner
    if owner != caller.principal.ref:
        await host.audit.record(
            caller.act("turn.cancelled", "turn", turn_id, chat=chat.record.uri, owner=owner)
        )


def do_confirm_tool_call(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> None:
    """A client's chat/toolCallConfirmed: said, and the answer handed to the waiting call."""
    runner = chat.runner
    call_id = action["toolCallId"]
    if (
        runner is None
        or runner.turn_id != action.get("turnId")
        or runner.calls.get(call_id) != "pending-confirmation"
    ):
        raise invalid_params(f"Tool call {call_id} is not waiting for confirmation")
    caller.say(host, chat.channel, action)
    runner.answer(call_id, action["approved"], action.get("selectedOptionId"))


def do_start_automation_turn(
    host: Host, caller: Caller, chat: LiveChat, message: dict[str, Any]
) -> str:
    """An automation run's message, sent as its owner (the caller) to its session's chat: a
    turn started there, as far as the owner may send it and has room for one more agent."""
    caller.may_in(chat.session, "chat:send")
    room_for_agent(host, chat.session.record.owner, chat.session.record.provider, chat)
    sent = with_sender({**message, "origin": {"kind": "automation"}}, caller.principal.ref)
    return host.turns.begin_message(chat, sent)


def do_resume_turn(
    host: Host, caller: Caller, chat: LiveChat, action: dict[str, Any]
) -> str | None:
    """A client's chat/turnResume: VS Code's host's conditions checked against the chat's held
    state in its order, refused in its words; then said with its origin, and the turn run
    again by its backend under its own id. Why it is refused, or None."""
    caller.may_in(chat.session, "chat:send")
    state = chat.state()
    if state.get("activeTurn") is not None or chat.busy:
        return "Cannot resume while a turn is active."
    if chat.session.record.is_archived or chat.record.is_archived:
        return "Cannot resume a read-only or archived chat."
    turns = state.get("turns") or []
    turn = turns[-1] if turns else None
    if turn is None or turn.get("id") != action["turnId"] or not ends_resumable(turn):
        return "The requested turn is not the latest resumable errored turn."
    agent = host.sessions.agents.get(chat.session.record.provider)
    if not getattr(agent, "resumes_turns", False):
        return "The session provider does not support turn resume."
    room_for_agent(host, chat.session.record.owner, chat.session.record.provider, chat)
    caller.say(host, chat.channel, action)
    host.turns.resume(chat, turn)
    return None
