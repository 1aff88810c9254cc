"""The CLI's `can_use_tool` questions, put to a person and answered in the SDK's terms.

The CLI asks about a call its own rules and the session's permission mode do not already
allow. The person is offered what VS Code's agent host offers (seed 000, chat/toolCallReady):
Allow in this Session, Allow Once, Skip. A tool allowed for the session is not asked about
again in that chat: the chat's `allowed` set answers for it, also after the CLI was let go and
started again.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableSet
from typing import Any

from claude_agent_sdk import (
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from hosts.backends.base import InputAnswer, PermissionOption

from .ask_user_question import ASK_USER_QUESTION, NotAQuestion, decision, question_request
from .turn import Turn

ALLOW_SESSION = PermissionOption("allowSession", "Allow in this Session", "approve")
ALLOW_ONCE = PermissionOption("allowOnce", "Allow Once", "approve")
SKIP = PermissionOption("skip", "Skip", "deny")
OPTIONS = (ALLOW_SESSION, ALLOW_ONCE, SKIP)

#: What the model is told of a call the person skipped.
SKIPPED = "The person declined this tool call."
#: What the CLI is told of a call asked about after the turn was stopped: stop the turn too.
STOPPED = "The turn was stopped."

Decision = PermissionResultAllow | PermissionResultDeny


async def decide(
    turn: Turn | None,
    allowed: MutableSet[str],
    tool_name: str,
    tool_input: dict[str, Any],
    context: ToolPermissionContext,
) -> Decision:
    """Ask the person about one call (or answer for them where the chat allowed the tool)."""
    if turn is None or turn.cancelled.is_set():
        return PermissionResultDeny(message=STOPPED, interrupt=True)
    call_id = context.tool_use_id or ""
    call = turn.call(call_id, tool_name, tool_input)
    if tool_name == ASK_USER_QUESTION:
        return await ask_user_question(turn, call_id, tool_input)
    if call.client:
        # A client's own tool: that client runs it in the person's own window, under that
        # window's confirmation; asking here too would ask twice for one call.
        return PermissionResultAllow()
    if tool_name in allowed:
        turn.running(call)
        return PermissionResultAllow()
    question = asyncio.ensure_future(
        turn.events.permission(
            call_id, title=call.title, tool_input=call.input_text(), options=OPTIONS
        )
    )
    turn.questions.add(question)
    # Asked: the answer, whatever it is, is what the call's readiness says (an approval
    # itself makes it run), so it is never said running as if nobody had been asked.
    call.asked = True
    try:
        answer = await question
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the CLI withdrew the question, or the chat is closing
        return PermissionResultDeny(message=STOPPED, interrupt=True)
    finally:
        turn.questions.discard(question)
    if not answer.approved:
        return PermissionResultDeny(message=SKIPPED)
    if answer.option_id == ALLOW_SESSION.option_id:
        allowed.add(tool_name)
    return PermissionResultAllow()


async def ask_user_question(turn: Turn, call_id: str, tool_input: dict[str, Any]) -> Decision:
    """Claude's own question: runs at once (asking whether it may ask would be asking twice),
    put to the person, and answered with what they said."""
    call = turn.calls[call_id]
    turn.running(call)
    try:
        request = question_request(tool_input)
    except NotAQuestion as error:
        return PermissionResultDeny(message=str(error))
    asking = asyncio.ensure_future(turn.events.ask(request))
    turn.questions.add(asking)
    try:
        answer: InputAnswer = await asking
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        return PermissionResultDeny(message=STOPPED, interrupt=True)
    finally:
        turn.questions.discard(asking)
    if turn.cancelled.is_set():
        return PermissionResultDeny(message=STOPPED, interrupt=True)
    return decision(tool_input, request, answer)
