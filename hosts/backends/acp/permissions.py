"""The agent's `session/request_permission`, asked of a person and answered in the agent's terms."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse, ToolCallUpdate
from acp.schema import PermissionOption as AcpPermissionOption

from hosts.backends.base import PermissionAnswer, PermissionOption

from .turn import Turn
from .updates import ToolCallState

CANCELLED = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


async def ask_person(
    turn: Turn | None, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
) -> RequestPermissionResponse:
    """Ask a person about the call; the answer becomes one of the agent's own options.

    Outside a turn, or once it is cancelled, the answer is `cancelled` without asking anybody.
    """
    if turn is None or turn.cancelled.is_set():
        return CANCELLED
    raw = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw.pop("status", None)  # asking is not progress
    call = turn.updates.tool(raw)
    if call is None:
        return CANCELLED
    if call.client:
        # A client's tool runs under its own window's confirmation: asked here too, one call
        # would be asked about twice.
        allow = [o.option_id for o in options if o.kind == "allow_once"]
        allow = allow or [o.option_id for o in options if o.kind.startswith("allow")]
        if allow:
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=allow[0])
            )
    ours = [
        PermissionOption(
            option.option_id,
            option.name,
            "approve" if option.kind.startswith("allow") else "deny",
        )
        for option in options
    ]
    question = asyncio.ensure_future(
        turn.events.permission(
            tool_call.tool_call_id, title=call.title, tool_input=call.tool_input, options=ours
        )
    )
    turn.questions.add(question)
    try:
        answer = await question
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the connection is closing, not the question being answered
        return CANCELLED
    finally:
        turn.questions.discard(question)
    return _response(call, answer, ours)


def _response(
    call: ToolCallState, answer: PermissionAnswer, options: Sequence[PermissionOption]
) -> RequestPermissionResponse:
    wanted: Literal["approve", "deny"] = "approve" if answer.approved else "deny"
    matching = [option.option_id for option in options if option.kind == wanted]
    chosen = answer.option_id if answer.option_id in matching else None
    # Without the person's pick, the first option of the right kind: a refusal the agent
    # understands as such, where `cancelled` would mean the whole turn was stopped.
    chosen = chosen or (matching[0] if matching else None)
    if not answer.approved:
        call.denied = True
    if chosen is None:
        return CANCELLED
    if answer.approved:
        call.running = True  # the approval itself makes the call run
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))
