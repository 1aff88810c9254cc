"""Messages a chat holds for later turns: one steering message at most, and a queue.

A turn started from one of them (``chat/turnStarted`` naming it as its
``queuedMessageId``) consumes it.
"""

from __future__ import annotations

from typing import Any

from ._common import (
    Action,
    JsonObject,
    as_list,
    as_object,
    assign,
    compact,
    key_equals,
    with_item_set,
    without,
)


def _queued_without(queued: list[Any], message_id: Any) -> list[Any]:
    return [message for message in queued if not key_equals("id", message_id)(message)]


def pending_message_set(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/pendingMessageSet``: the steering message replaced, or a queued one set by id."""
    entry = compact(id=action.get("id"), message=action.get("message"))
    if action.get("kind") == "steering":
        return {**state, "steeringMessage": entry}
    return with_item_set(state, "queuedMessages", entry, "id")


def pending_message_removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/pendingMessageRemoved``: the steering or queued message ``id`` withdrawn."""
    if action.get("kind") == "steering":
        steering = as_object(state.get("steeringMessage"))
        if steering is None or steering.get("id") != action.get("id"):
            return state
        return without(state, "steeringMessage")
    queued = state.get("queuedMessages")
    if not isinstance(queued, list):
        return state
    remaining = _queued_without(queued, action.get("id"))
    if len(remaining) == len(queued):
        return state
    return assign(state, {"queuedMessages": remaining or None})


def queued_messages_reordered(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/queuedMessagesReordered``: the queue put in the order the action names."""
    queued = state.get("queuedMessages")
    if not isinstance(queued, list):
        return state
    by_id = {m.get("id"): m for m in queued if isinstance(m, dict)}
    seen: set[Any] = set()
    reordered: list[Any] = []
    for message_id in as_list(action.get("order")):
        # Unknown and repeated ids are skipped.
        if isinstance(message_id, str) and message_id in by_id and message_id not in seen:
            seen.add(message_id)
            reordered.append(by_id[message_id])
    # Messages the order does not mention keep their relative order at the end.
    reordered.extend(m for m in queued if not (isinstance(m, dict) and m.get("id") in seen))
    return {**state, "queuedMessages": reordered}


def pending_message_consumed(state: JsonObject, message_id: Any) -> JsonObject:
    """``state`` without the pending message ``message_id``, which has started a turn.

    Every queued copy goes, and an emptied queue is dropped.
    """
    steering = as_object(state.get("steeringMessage"))
    if steering is not None and steering.get("id") == message_id:
        state = without(state, "steeringMessage")
    queued = state.get("queuedMessages")
    if isinstance(queued, list):
        state = assign(state, {"queuedMessages": _queued_without(queued, message_id) or None})
    return state
