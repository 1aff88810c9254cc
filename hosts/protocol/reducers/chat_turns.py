"""A chat's turns: one starting, its usage, its ending, resuming it, and the turn history.

Timestamps: 1.0 derives ``modifiedAt`` from the turn itself, not from a clock.
``chat/turnStarted`` copies the action's ``startedAt``; a turn's end stamps
``startedAt + duration`` normalised to UTC (``...Z`` with milliseconds). The
``now_ms`` clock is used only as a fallback when those inputs are missing or
unparseable, where the TypeScript would throw.
"""

from __future__ import annotations

from typing import Any

from ._common import (
    STATUS_ERROR,
    Action,
    JsonObject,
    add_ms_to_timestamp,
    as_list,
    as_object,
    assign,
    compact,
    find_index,
    iso_from_ms,
    key_equals,
    without,
)
from .chat_active_turn import active_turn, response_parts, summary_status, unread_status
from .chat_pending_messages import pending_message_consumed
from .chat_tool_calls import skipped


def turn_started(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/turnStarted``: a new active turn, consuming the pending message it came from."""
    started_at = action.get("startedAt")
    if not isinstance(started_at, str):
        # startedAt is required; a missing one gets the host clock rather
        # than leaving the active turn without its mandatory timestamp.
        started_at = iso_from_ms(now_ms)
    active = compact(
        id=action.get("turnId"),
        startedAt=started_at,
        message=action.get("message"),
        responseParts=[],
    )
    next_state: JsonObject = {**state, "activeTurn": active}
    next_state["status"] = unread_status(next_state)
    next_state["modifiedAt"] = started_at
    queued_id = action.get("queuedMessageId")
    if queued_id:
        next_state = pending_message_consumed(next_state, queued_id)
    return next_state


def usage_reported(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/usage``: the active turn's token usage so far."""
    active = active_turn(state, action.get("turnId"))
    if active is None:
        return state
    return {**state, "activeTurn": assign(active, {"usage": action.get("usage")})}


def _finished(part: Any) -> Any:
    """``part``, its tool call cancelled (reason ``skipped``) if the turn left it unfinished."""
    if not isinstance(part, dict) or part.get("kind") != "toolCall":
        return part
    tc = as_object(part.get("toolCall"))
    if tc is None:
        return part
    cancelled = skipped(tc)
    return part if cancelled is tc else {"kind": "toolCall", "toolCall": cancelled}


def _ended(
    state: JsonObject,
    action: Action,
    turn_state: str,
    now_ms: int,
    *,
    terminal: int | None = None,
    error_part: Any = None,
) -> JsonObject:
    """Finish the active turn ``action["turnId"]`` into ``turns``.

    Unfinished tool calls are cancelled; ``error_part`` (chat/error) is appended
    last. ``modifiedAt`` becomes the turn's end: startedAt + duration.
    """
    active = active_turn(state, action.get("turnId"))
    if active is None:
        return state
    parts = [_finished(part) for part in response_parts(active)]
    if error_part is not None:
        parts.append(error_part)
    duration = action.get("duration")
    if isinstance(duration, int | float) and not isinstance(duration, bool):
        # Producer-supplied and opaque, but a negative duration is nonsense.
        duration = max(0, duration)
        modified_at = add_ms_to_timestamp(active.get("startedAt"), duration, fallback_ms=now_ms)
    else:
        # Pre-1.0 turn ends carried no duration: leave it out, and the end
        # time is then best known as "now".
        duration = None
        modified_at = iso_from_ms(now_ms)
    turn = compact(
        id=active.get("id"),
        startedAt=active.get("startedAt"),
        duration=duration,
        message=active.get("message"),
        responseParts=parts,
        usage=active.get("usage"),
        state=turn_state,
    )
    next_state = without(state, "activeTurn")
    next_state["turns"] = [*as_list(state.get("turns")), turn]
    next_state["modifiedAt"] = modified_at
    next_state["status"] = summary_status(next_state, terminal)
    return next_state


def turn_completed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/turnComplete``: the active turn finished normally."""
    return _ended(state, action, "complete", now_ms)


def turn_cancelled(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/turnCancelled``: the active turn stopped at the user's request."""
    return _ended(state, action, "cancelled", now_ms)


def turn_failed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/error``: the active turn ended on its error part; the chat shows Error."""
    return _ended(
        state, action, "error", now_ms, terminal=STATUS_ERROR, error_part=action.get("part")
    )


def turn_resumed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/turnResume``: reopen the latest turn if it stopped at a resumable error.

    The turn goes back to being the active turn with its message, parts
    (including the error) and usage intact, and finishes later as one turn.
    """
    turns = as_list(state.get("turns"))
    if state.get("activeTurn") is not None or not turns:
        return state
    turn = turns[-1]
    if not isinstance(turn, dict) or turn.get("id") != action.get("turnId"):
        return state
    parts = response_parts(turn)
    last = parts[-1] if parts else None
    resumable = isinstance(last, dict) and last.get("kind") == "error" and last.get("resumable")
    if turn.get("state") != "error" or resumable is not True:
        return state
    active = compact(
        id=turn.get("id"),
        startedAt=turn.get("startedAt") or state.get("modifiedAt"),
        message=turn.get("message"),
        responseParts=parts,
        usage=turn.get("usage"),
    )
    next_state: JsonObject = {**state, "turns": turns[:-1], "activeTurn": active}
    next_state["status"] = unread_status(next_state)
    return next_state


def truncated(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/truncated``: the active turn dropped, the turns cut after ``turnId`` (or emptied)."""
    turn_id = action.get("turnId")
    turns = as_list(state.get("turns"))
    if turn_id is None:
        kept: list[Any] = []
    else:
        index = find_index(turns, key_equals("id", turn_id))
        if index < 0:
            return state
        kept = turns[: index + 1]
    next_state = without(state, "activeTurn")
    next_state["turns"] = kept
    if turn_id is None:
        # Nothing older is left to page in once every turn is gone.
        next_state.pop("turnsNextCursor", None)
    next_state["status"] = summary_status(next_state)
    return next_state


def turns_loaded(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/turnsLoaded``: an older page of turns put before the ones held."""
    turns = as_list(state.get("turns"))
    known = {turn.get("id") for turn in turns if isinstance(turn, dict)}
    older = [
        turn
        for turn in as_list(action.get("turns"))
        if not (isinstance(turn, dict) and turn.get("id") in known)
    ]
    next_state = {**state, "turns": [*older, *turns]}
    return assign(next_state, {"turnsNextCursor": action.get("turnsNextCursor")})
