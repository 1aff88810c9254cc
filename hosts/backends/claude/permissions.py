"""The CLI's `can_use_tool` questions, put to a person and answered in the SDK's terms.

The CLI asks about a call its own rules and the session's permission mode do not already
allow. The person is offered what VS Code's agent host offers (seed 000, chat/toolCallReady):
Allow in this Session, Allow Once, Skip. A tool allowed for the session is not asked about
again in that chat: the chat's `allowed` set answers for it, also after the CLI was let go and
started again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableSet
from typing import Any

from claude_agent_sdk import (
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from hosts.backends.base import InputAnswer, PermissionOption
from hosts.backends.managed_settings import ManagedSettings

from .ask_user_question import ASK_USER_QUESTION, NotAQuestion, decision, question_request
from .turn import Turn

ALLOW_SESSION = PermissionOption("allowSession", "Allow in this Session", "approve")
ALLOW_ONCE = PermissionOption("allowOnce", "Allow Once", "approve")
SKIP = PermissionOption("skip", "Skip", "deny")
OPTIONS = (ALLOW_SESSION, ALLOW_ONCE, SKIP)

#: What the model is told of a call the person skipped.
SKIPPED = "The person declined this tool call."
#: What the model is told of a call the operator's managed rules deny.
MANAGED_DENY = "The operator's managed settings deny this tool."
#: What the CLI is told of a call asked about after the turn was stopped: stop the turn too.
STOPPED = "The turn was stopped."

Decision = PermissionResultAllow | PermissionResultDeny


async def decide(
    turn: Turn | None,
    allowed: MutableSet[str],
    tool_name: str,
    tool_input: dict[str, Any],
    context: ToolPermissionContext,
    managed: ManagedSettings | None = None,
) -> Decision:
    """Ask the person about one call (or answer for them where the chat allowed the tool).
    The operator's managed settings come first: a tool they deny is refused unasked, and one
    they make ineligible is asked about on every call, with Allow Once and Skip alone."""
    managed = managed or ManagedSettings()
    if turn is None or turn.cancelled.is_set():
        return PermissionResultDeny(message=STOPPED, interrupt=True)
    call_id = context.tool_use_id or ""
    call = turn.call(call_id, tool_name, tool_input)
    if tool_name == ASK_USER_QUESTION:
        return await ask_user_question(turn, call_id, tool_input)
    if tool_name in managed.deny:
        # The CLI holds the same rule; a bare tool name is checked here too.
        return PermissionResultDeny(message=MANAGED_DENY)
    if call.client:
        # A client's own tool: that client runs it in the person's own window, under that
        # window's confirmation; asking here too would ask twice for one call.
        return PermissionResultAllow()
    eligible = managed.may_allow_for_session(tool_name)
    if tool_name in allowed and eligible:
        turn.running(call)
        return PermissionResultAllow()
    question = asyncio.ensure_future(
        turn.events.permission(
            call_id,
            title=call.title,
            tool_input=call.input_text(),
            options=OPTIONS if eligible else (ALLOW_ONCE, SKIP),
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
    if answer.option_id == ALLOW_SESSION.option_id and eligible:
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


def managed_settings_json(managed: ManagedSettings) -> str | None:
    """The managed rules as the CLI's flag settings (`--settings`), so the CLI holds them too:
    its deny and ask rules, a tool ineligible for approval beyond one call among the ask rules
    (the CLI then asks where its own rules or the session's mode would not), and the lock on
    bypassing permissions. None when the operator set none."""
    permissions: dict[str, Any] = {}
    if managed.deny:
        permissions["deny"] = list(managed.deny)
    ask = list(dict.fromkeys((*managed.ask, *managed.ineligible())))
    if ask:
        permissions["ask"] = ask
    if managed.bypass_disabled:
        permissions["disableBypassPermissionsMode"] = "disable"
    return json.dumps({"permissions": permissions}) if permissions else None
