"""Response parts streaming into a chat's active turn: text, reasoning, parts and tool calls.

Every action here names its turn; one for a turn that is not the active one
(it has ended, or another has started) changes nothing.
"""

from __future__ import annotations

from typing import Any

from ._action_table import Handler
from ._common import Action, JsonObject, find_index, replace_at
from .chat_active_turn import active_turn, response_parts, with_response_parts
from .chat_tool_calls import ToolCallTransition, started


def _part_id(part: Any) -> Any:
    if not isinstance(part, dict):
        return None
    if part.get("kind") == "toolCall":
        tool_call = part.get("toolCall")
        return tool_call.get("toolCallId") if isinstance(tool_call, dict) else None
    return part.get("id")


def appends_to_part(part_kind: str) -> Handler:
    """Handler: ``content`` appended to the ``part_kind`` part ``partId`` of the active turn.

    The first part carrying that id is the target; if it is of another kind
    the action changes nothing.
    """

    def handler(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
        active = active_turn(state, action.get("turnId"))
        if active is None:
            return state
        parts = response_parts(active)
        index = find_index(parts, lambda part: _part_id(part) == action.get("partId"))
        if index < 0 or parts[index].get("kind") != part_kind:
            return state
        part = parts[index]
        content = str(part.get("content") or "") + str(action.get("content") or "")
        new_parts = replace_at(parts, index, {**part, "content": content})
        return with_response_parts(state, active, new_parts)

    return handler


def part_added(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/responsePart``: a whole part appended to the active turn."""
    active = active_turn(state, action.get("turnId"))
    part = action.get("part")
    if active is None or part is None:
        return state
    # 1.0 carries errors only on chat/error, which also ends the turn; an error
    # part arriving here would leave a turn that looks failed yet still runs.
    if isinstance(part, dict) and part.get("kind") == "error":
        return state
    return with_response_parts(state, active, [*response_parts(active), part])


def tool_call_started(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/toolCallStart``: a streaming tool call appended to the active turn."""
    active = active_turn(state, action.get("turnId"))
    if active is None:
        return state
    parts = [*response_parts(active), {"kind": "toolCall", "toolCall": started(action)}]
    return with_response_parts(state, active, parts)


def updates_tool_call(transition: ToolCallTransition) -> Handler:
    """Handler: ``transition`` applied to the tool call ``toolCallId`` of the active turn.

    The state is returned unchanged when the turn is not the active one, the
    tool call is unknown, or the transition is refused.
    """

    def handler(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
        active = active_turn(state, action.get("turnId"))
        if active is None:
            return state
        update = transition(action)
        tool_call_id = action.get("toolCallId")
        found = False
        parts: list[Any] = []
        for part in response_parts(active):
            if (
                isinstance(part, dict)
                and part.get("kind") == "toolCall"
                and isinstance(part.get("toolCall"), dict)
                and part["toolCall"].get("toolCallId") == tool_call_id
            ):
                updated = update(part["toolCall"])
                if updated is not part["toolCall"]:
                    part = {**part, "toolCall": updated}
                    found = True
            parts.append(part)
        return with_response_parts(state, active, parts) if found else state

    return handler
