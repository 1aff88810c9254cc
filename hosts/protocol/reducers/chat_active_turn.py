"""A chat's active turn: reading and replacing its response parts, and the status it implies.

The chat's activity (Idle, InProgress, InputNeeded, Error) is never set by an
action directly; it is derived from the active turn after every change that
can move it, keeping the IsRead/IsArchived flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._action_table import Handler
from ._common import (
    STATUS_IDLE,
    STATUS_IN_PROGRESS,
    STATUS_INPUT_NEEDED,
    STATUS_IS_READ,
    JsonObject,
    as_list,
    as_object,
    status_of,
    with_activity,
    with_status_flag,
)
from .chat_tool_calls import BLOCKING_STATUSES


def response_parts(turn: Any) -> list[Any]:
    """The turn's ``responseParts``, or an empty list."""
    return as_list(turn.get("responseParts")) if isinstance(turn, dict) else []


def active_turn(state: Mapping[str, Any], turn_id: Any) -> JsonObject | None:
    """The active turn if it is ``turn_id``, else ``None``: actions for another turn are stale."""
    active = as_object(state.get("activeTurn"))
    if active is None or active.get("id") != turn_id:
        return None
    return active


def with_response_parts(state: JsonObject, active: JsonObject, parts: list[Any]) -> JsonObject:
    """``state`` with the active turn ``active`` holding ``parts``."""
    return {**state, "activeTurn": {**active, "responseParts": parts}}


def _has_blocking_tool_call(state: Mapping[str, Any]) -> bool:
    return any(
        part.get("kind") == "toolCall"
        and isinstance(part.get("toolCall"), dict)
        and part["toolCall"].get("status") in BLOCKING_STATUSES
        for part in response_parts(state.get("activeTurn"))
        if isinstance(part, dict)
    )


def _has_open_input_request(state: Mapping[str, Any]) -> bool:
    return any(
        part.get("kind") == "inputRequest" and part.get("response") is None
        for part in response_parts(state.get("activeTurn"))
        if isinstance(part, dict)
    )


def summary_status(state: Mapping[str, Any], terminal: int | None = None) -> int:
    """Derive the status from the live work, keeping the IsRead/IsArchived flags.

    Error (when the turn ended through chat/error) beats InputNeeded (an open
    input request or a blocked tool call), which beats InProgress (any active
    turn); otherwise the chat is Idle.
    """
    if terminal is not None:
        activity = terminal
    elif _has_open_input_request(state) or _has_blocking_tool_call(state):
        activity = STATUS_INPUT_NEEDED
    elif state.get("activeTurn") is not None:
        activity = STATUS_IN_PROGRESS
    else:
        activity = STATUS_IDLE
    return with_activity(status_of(state), activity)


def unread_status(state: Mapping[str, Any]) -> int:
    """Recomputed status with IsRead cleared: new work the user has not seen."""
    return with_status_flag(summary_status(state), STATUS_IS_READ, False)


def refreshes_status(handler: Handler) -> Handler:
    """``handler``, then the status derived again, whether or not the handler changed anything."""

    def refreshed(state: JsonObject, action: Mapping[str, Any], now_ms: int) -> JsonObject:
        next_state = handler(state, action, now_ms)
        status = summary_status(next_state)
        return (
            next_state if status == next_state.get("status") else {**next_state, "status": status}
        )

    return refreshed
