"""Input requests: questions a chat turn puts to the user, their draft answers and the reply.

An input request is a response part of the active turn; while one is open the
chat's status is InputNeeded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._common import Action, JsonObject, as_object, assign, find_index, replace_at
from .chat_active_turn import response_parts, summary_status, unread_status, with_response_parts


def _find_open_input_request(parts: Sequence[Any], request_id: Any) -> int:
    """Index of the unanswered input-request part for ``request_id``, or -1.

    Answered parts are skipped, so a resolved request is never reopened by a
    later action reusing its id.
    """
    return find_index(
        parts,
        lambda part: (
            isinstance(part, dict)
            and part.get("kind") == "inputRequest"
            and part.get("response") is None
            and isinstance(part.get("request"), dict)
            and part["request"].get("id") == request_id
        ),
    )


def input_requested(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/inputRequested``: a question opened, or re-asked in place, on the active turn."""
    active = as_object(state.get("activeTurn"))
    request = as_object(action.get("request"))
    if active is None or request is None:
        # The request lives in the turn, so without one there is nowhere to put it.
        return state
    parts = response_parts(active)
    index = _find_open_input_request(parts, request.get("id"))
    if index >= 0:
        # Re-asking keeps the position in the stream and any draft answers
        # the new request does not restate.
        if request.get("answers") is None:
            existing = parts[index]["request"].get("answers")
            request = assign(request, {"answers": existing})
        parts = replace_at(parts, index, {"kind": "inputRequest", "request": request})
    else:
        parts = [*parts, {"kind": "inputRequest", "request": request}]
    next_state = with_response_parts(state, active, parts)
    next_state["status"] = unread_status(next_state)
    return next_state


def _with_open_request_answered(
    state: JsonObject, request_id: Any, answer: Callable[[JsonObject], JsonObject]
) -> JsonObject:
    """The open input-request part ``request_id`` of the active turn replaced by ``answer(part)``.

    Without an active turn or such an open request, ``state`` is returned as is.
    """
    active = as_object(state.get("activeTurn"))
    if active is None:
        return state
    parts = response_parts(active)
    index = _find_open_input_request(parts, request_id)
    if index < 0:
        return state
    return with_response_parts(state, active, replace_at(parts, index, answer(parts[index])))


def input_answer_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/inputAnswerChanged``: a draft answer to one question set or cleared."""
    question_id = action.get("questionId")
    if not isinstance(question_id, str):
        return state

    def draft_answered(part: JsonObject) -> JsonObject:
        request = part["request"]
        answers = dict(as_object(request.get("answers")) or {})
        if action.get("answer") is None:
            answers.pop(question_id, None)
        else:
            answers[question_id] = action["answer"]
        return {**part, "request": assign(request, {"answers": answers or None})}

    return _with_open_request_answered(state, action.get("requestId"), draft_answered)


def input_completed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """``chat/inputCompleted``: the request answered (or declined) and closed."""

    def resolved(part: JsonObject) -> JsonObject:
        request = part["request"]
        # Submitted answers override the synced drafts question by question.
        answers = {
            **(as_object(request.get("answers")) or {}),
            **(as_object(action.get("answers")) or {}),
        }
        return assign(
            {**part, "request": assign(request, {"answers": answers or None})},
            {"response": action.get("response")},
        )

    next_state = _with_open_request_answered(state, action.get("requestId"), resolved)
    if next_state is state:
        return state
    next_state["status"] = summary_status(next_state)
    return next_state
