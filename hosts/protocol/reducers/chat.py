"""Reducer for ``ChatState`` (``ahp-chat:`` channels).

Port of ``types/channels-chat/reducer.ts`` as of protocol 1.0: turn lifecycle,
the tool-call state machine, input requests, pending messages and the chat's
own metadata. The chat summary fields (title, status, modifiedAt, ...) sit
directly on the state.

Timestamps: 1.0 derives ``modifiedAt`` from the turn itself, not from a clock.
``chat/turnStarted`` copies the action's ``startedAt``; a turn's end stamps
``startedAt + duration`` normalised to UTC (``...Z`` with milliseconds). The
``now_ms`` clock is used only as a fallback when those inputs are missing or
unparseable, where the TypeScript would throw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._common import (
    STATUS_ERROR,
    STATUS_IDLE,
    STATUS_IN_PROGRESS,
    STATUS_INPUT_NEEDED,
    STATUS_IS_ARCHIVED,
    STATUS_IS_READ,
    Action,
    JsonObject,
    add_ms_to_timestamp,
    as_list,
    as_object,
    assign,
    compact,
    directory_added,
    directory_removed,
    find_index,
    iso_from_ms,
    key_equals,
    remove_at,
    replace_at,
    status_of,
    upsert,
    with_activity,
    with_status_flag,
    without,
)

ToolCall = JsonObject
ToolCallUpdater = Callable[[ToolCall], ToolCall]

# Tool-call statuses.
STREAMING = "streaming"
PENDING_CONFIRMATION = "pending-confirmation"
RUNNING = "running"
AUTH_REQUIRED = "auth-required"
PENDING_RESULT_CONFIRMATION = "pending-result-confirmation"
COMPLETED = "completed"
CANCELLED = "cancelled"

#: Statuses in which a tool call waits on something outside the turn.
_BLOCKING_STATUSES = frozenset({PENDING_CONFIRMATION, PENDING_RESULT_CONFIRMATION, AUTH_REQUIRED})


# ─── Status ──────────────────────────────────────────────────────────────────


def _parts(turn: Any) -> list[Any]:
    return as_list(turn.get("responseParts")) if isinstance(turn, dict) else []


def _has_blocking_tool_call(state: Mapping[str, Any]) -> bool:
    return any(
        part.get("kind") == "toolCall"
        and isinstance(part.get("toolCall"), dict)
        and part["toolCall"].get("status") in _BLOCKING_STATUSES
        for part in _parts(state.get("activeTurn"))
        if isinstance(part, dict)
    )


def _has_open_input_request(state: Mapping[str, Any]) -> bool:
    return any(
        part.get("kind") == "inputRequest" and part.get("response") is None
        for part in _parts(state.get("activeTurn"))
        if isinstance(part, dict)
    )


def _summary_status(state: Mapping[str, Any], terminal: int | None = None) -> int:
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


def _refresh_status(state: JsonObject) -> JsonObject:
    status = _summary_status(state)
    return state if status == state.get("status") else {**state, "status": status}


def _unread_status(state: Mapping[str, Any]) -> int:
    """Recomputed status with IsRead cleared: new work the user has not seen."""
    return with_status_flag(_summary_status(state), STATUS_IS_READ, False)


# ─── Tool calls ──────────────────────────────────────────────────────────────


def _tc_base(tc: ToolCall, meta: Any = None) -> JsonObject:
    """The fields every tool-call status carries; ``meta`` replaces ``_meta`` if given."""
    return compact(
        toolCallId=tc.get("toolCallId"),
        toolName=tc.get("toolName"),
        displayName=tc.get("displayName"),
        intention=tc.get("intention"),
        contributor=tc.get("contributor"),
        _meta=meta if meta is not None else tc.get("_meta"),
    )


def _first_set(value: Any, fallback: Any) -> Any:
    """``value ?? fallback``: the first of the two that is not null/absent."""
    return value if value is not None else fallback


def _selected_option(options: Any, option_id: Any) -> Any:
    if not option_id or not isinstance(options, list):
        return None
    index = find_index(options, key_equals("id", option_id))
    return options[index] if index >= 0 else None


def _refine_contributor(current: Any, proposed: Any) -> Any:
    """Merge a contributor named at ``ready`` into the one named at ``start``.

    Who executes a tool call is fixed when it starts: a client-owned call stays
    with its client (only that same client may restate itself), and a call not
    owned by a client can never become client-owned late. Any other refinement,
    such as finally attributing an MCP server, is taken.
    """
    if not isinstance(proposed, dict):
        return current
    if isinstance(current, dict) and current.get("kind") == "client":
        same = proposed.get("kind") == "client" and proposed.get("clientId") == current.get(
            "clientId"
        )
        return proposed if same else current
    if proposed.get("kind") == "client":
        return current
    return proposed


def _update_tool_call(
    state: JsonObject, turn_id: Any, tool_call_id: Any, updater: ToolCallUpdater
) -> JsonObject:
    """Apply ``updater`` to the tool call ``tool_call_id`` of the active turn.

    The state is returned unchanged when the turn is not the active one, the
    tool call is unknown, or ``updater`` returns its argument (a refused
    transition).
    """
    active = as_object(state.get("activeTurn"))
    if active is None or active.get("id") != turn_id:
        return state
    found = False
    parts: list[Any] = []
    for part in _parts(active):
        if (
            isinstance(part, dict)
            and part.get("kind") == "toolCall"
            and isinstance(part.get("toolCall"), dict)
            and part["toolCall"].get("toolCallId") == tool_call_id
        ):
            updated = updater(part["toolCall"])
            if updated is not part["toolCall"]:
                part = {**part, "toolCall": updated}
                found = True
        parts.append(part)
    if not found:
        return state
    return {**state, "activeTurn": {**active, "responseParts": parts}}


def _tool_call_delta(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        if tc.get("status") != STREAMING:
            return tc
        changes: JsonObject = {}
        if action.get("_meta") is not None:
            changes["_meta"] = action["_meta"]
        # Content is optional: a delta may only refresh the message or _meta,
        # and must not create an empty partialInput then.
        if action.get("content") is not None:
            changes["partialInput"] = str(tc.get("partialInput") or "") + str(action["content"])
        if action.get("invocationMessage") is not None:
            changes["invocationMessage"] = action["invocationMessage"]
        return {**tc, **changes}

    return update


def _tool_call_ready(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        status = tc.get("status")
        if status not in (STREAMING, RUNNING, PENDING_CONFIRMATION):
            return tc
        base = {
            **_tc_base(tc, action.get("_meta")),
            **compact(
                contributor=_refine_contributor(tc.get("contributor"), action.get("contributor")),
                intention=_first_set(action.get("intention"), tc.get("intention")),
            ),
        }
        # The settled input may arrive now; when omitted, keep what the call
        # has, except from streaming where there was only a partial stream.
        tool_input = _first_set(
            action.get("toolInput"), None if status == STREAMING else tc.get("toolInput")
        )
        if action.get("confirmed"):
            return {
                "status": RUNNING,
                **base,
                **compact(
                    invocationMessage=action.get("invocationMessage"),
                    toolInput=tool_input,
                    confirmed=action.get("confirmed"),
                ),
            }
        # A repeated ready on a pending call (e.g. a risk assessment that has
        # resolved) restates only what changes: omitted fields keep their value.
        # Coming from running, this is a mid-execution re-confirmation.
        pending = tc if status == PENDING_CONFIRMATION else {}

        def keep(field: str) -> Any:
            return _first_set(action.get(field), pending.get(field))

        return {
            "status": PENDING_CONFIRMATION,
            **base,
            **compact(
                invocationMessage=action.get("invocationMessage"),
                toolInput=tool_input,
                confirmationTitle=keep("confirmationTitle"),
                riskAssessment=keep("riskAssessment"),
                edits=keep("edits"),
                editable=keep("editable"),
                options=keep("options"),
            ),
        }

    return update


def _tool_call_confirmed(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        if tc.get("status") != PENDING_CONFIRMATION:
            return tc
        base = _tc_base(tc, action.get("_meta"))
        selected = _selected_option(tc.get("options"), action.get("selectedOptionId"))
        if action.get("approved"):
            # An edit replaces only an inline input; an input sent by content
            # reference is kept (the host rewrites the referenced contents).
            edited = action.get("editedToolInput")
            tool_input = (
                edited
                if edited is not None and isinstance(tc.get("toolInput"), str)
                else tc.get("toolInput")
            )
            return {
                "status": RUNNING,
                **base,
                **compact(
                    invocationMessage=tc.get("invocationMessage"),
                    toolInput=tool_input,
                    confirmed=action.get("confirmed"),
                    selectedOption=selected,
                ),
            }
        return {
            "status": CANCELLED,
            **base,
            **compact(
                invocationMessage=tc.get("invocationMessage"),
                toolInput=tc.get("toolInput"),
                reason=action.get("reason"),
                reasonMessage=action.get("reasonMessage"),
                userSuggestion=action.get("userSuggestion"),
                selectedOption=selected,
            ),
        }

    return update


def _tool_call_complete(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        status = tc.get("status")
        if status not in (RUNNING, PENDING_CONFIRMATION, AUTH_REQUIRED):
            return tc
        result = as_object(action.get("result")) or {}
        from_auth = status == AUTH_REQUIRED
        # From auth-required only a *failed* result is accepted: that is the
        # client cancelling instead of authenticating. A success is impossible
        # (execution never resumed), so it is ignored and the call stays put
        # until chat/toolCallAuthResolved.
        if from_auth and result.get("success"):
            return tc
        executed = status in (RUNNING, AUTH_REQUIRED)
        fields = compact(
            invocationMessage=tc.get("invocationMessage"),
            toolInput=tc.get("toolInput"),
            # Completing straight from pending-confirmation never asked anyone.
            confirmed=tc.get("confirmed") if executed else "not-needed",
            selectedOption=tc.get("selectedOption") if executed else None,
            # Content produced before the auth pause is all the tool ever made.
            content=tc.get("content") if from_auth else None,
        )
        # null in the result means "not given", as an absent key would.
        fields.update((key, value) for key, value in result.items() if value is not None)
        # Cancelling from auth-required always ends terminally: there is no
        # result worth reviewing, so requiresResultConfirmation is ignored.
        wants_review = bool(action.get("requiresResultConfirmation")) and not from_auth
        new_status = PENDING_RESULT_CONFIRMATION if wants_review else COMPLETED
        return {"status": new_status, **_tc_base(tc, action.get("_meta")), **fields}

    return update


def _tool_call_result_confirmed(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        if tc.get("status") != PENDING_RESULT_CONFIRMATION:
            return tc
        base = _tc_base(tc, action.get("_meta"))
        if action.get("approved"):
            return {
                "status": COMPLETED,
                **base,
                **compact(
                    invocationMessage=tc.get("invocationMessage"),
                    toolInput=tc.get("toolInput"),
                    confirmed=tc.get("confirmed"),
                    selectedOption=tc.get("selectedOption"),
                    success=tc.get("success"),
                    pastTenseMessage=tc.get("pastTenseMessage"),
                    content=tc.get("content"),
                    structuredContent=tc.get("structuredContent"),
                    error=tc.get("error"),
                ),
            }
        return {
            "status": CANCELLED,
            **base,
            **compact(
                invocationMessage=tc.get("invocationMessage"),
                toolInput=tc.get("toolInput"),
                reason="result-denied",
                selectedOption=tc.get("selectedOption"),
            ),
        }

    return update


def _tool_call_content_changed(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        if tc.get("status") != RUNNING:
            return tc
        changes: JsonObject = {"content": action.get("content")}
        if action.get("_meta") is not None:
            changes["_meta"] = action["_meta"]
        return assign(tc, changes)

    return update


def _tool_call_auth_required(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        if tc.get("status") != RUNNING:
            return tc
        contributor = tc.get("contributor")
        # Only MCP-contributed calls can pause on (MCP) authentication.
        if not isinstance(contributor, dict) or contributor.get("kind") != "mcp":
            return tc
        return {
            "status": AUTH_REQUIRED,
            **_tc_base(tc, action.get("_meta")),
            **compact(
                contributor=contributor,
                invocationMessage=tc.get("invocationMessage"),
                toolInput=tc.get("toolInput"),
                confirmed=tc.get("confirmed"),
                selectedOption=tc.get("selectedOption"),
                content=tc.get("content"),
                auth=action.get("auth"),
            ),
        }

    return update


def _tool_call_auth_resolved(action: Action) -> ToolCallUpdater:
    def update(tc: ToolCall) -> ToolCall:
        if tc.get("status") != AUTH_REQUIRED:
            return tc
        return {
            "status": RUNNING,
            **_tc_base(tc, action.get("_meta")),
            **compact(
                invocationMessage=tc.get("invocationMessage"),
                toolInput=tc.get("toolInput"),
                confirmed=tc.get("confirmed"),
                selectedOption=tc.get("selectedOption"),
                content=tc.get("content"),
            ),
        }

    return update


def _tool_call_start(state: JsonObject, action: Action) -> JsonObject:
    active = as_object(state.get("activeTurn"))
    if active is None or active.get("id") != action.get("turnId"):
        return state
    tool_call = compact(
        toolCallId=action.get("toolCallId"),
        toolName=action.get("toolName"),
        displayName=action.get("displayName"),
        intention=action.get("intention"),
        contributor=action.get("contributor"),
        _meta=action.get("_meta"),
        status=STREAMING,
    )
    parts = [*_parts(active), {"kind": "toolCall", "toolCall": tool_call}]
    return {**state, "activeTurn": {**active, "responseParts": parts}}


# ─── Response parts ──────────────────────────────────────────────────────────


def _part_id(part: Any) -> Any:
    if not isinstance(part, dict):
        return None
    if part.get("kind") == "toolCall":
        tool_call = part.get("toolCall")
        return tool_call.get("toolCallId") if isinstance(tool_call, dict) else None
    return part.get("id")


def _append_to_part(state: JsonObject, action: Action, part_kind: str) -> JsonObject:
    """Append ``content`` to the markdown/reasoning part ``partId`` (chat/delta, chat/reasoning).

    The first part carrying that id is the target; if it is of another kind
    the action changes nothing.
    """
    active = as_object(state.get("activeTurn"))
    if active is None or active.get("id") != action.get("turnId"):
        return state
    parts = _parts(active)
    index = find_index(parts, lambda part: _part_id(part) == action.get("partId"))
    if index < 0 or parts[index].get("kind") != part_kind:
        return state
    part = parts[index]
    content = str(part.get("content") or "") + str(action.get("content") or "")
    new_parts = replace_at(parts, index, {**part, "content": content})
    return {**state, "activeTurn": {**active, "responseParts": new_parts}}


def _response_part(state: JsonObject, action: Action) -> JsonObject:
    active = as_object(state.get("activeTurn"))
    part = action.get("part")
    if active is None or active.get("id") != action.get("turnId") or part is None:
        return state
    # 1.0 carries errors only on chat/error, which also ends the turn; an error
    # part arriving here would leave a turn that looks failed yet still runs.
    if isinstance(part, dict) and part.get("kind") == "error":
        return state
    return {**state, "activeTurn": {**active, "responseParts": [*_parts(active), part]}}


# ─── Turn lifecycle ──────────────────────────────────────────────────────────


def _turn_started(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    started_at = action.get("startedAt")
    if not isinstance(started_at, str):
        # startedAt is required; a missing one gets the host clock rather
        # than leaving the active turn without its mandatory timestamp.
        started_at = iso_from_ms(now_ms)
    active_turn = compact(
        id=action.get("turnId"),
        startedAt=started_at,
        message=action.get("message"),
        responseParts=[],
    )
    next_state: JsonObject = {**state, "activeTurn": active_turn}
    next_state["status"] = _unread_status(next_state)
    next_state["modifiedAt"] = started_at
    queued_id = action.get("queuedMessageId")
    if queued_id:
        # The turn was started from a pending message: consume it.
        steering = as_object(next_state.get("steeringMessage"))
        if steering is not None and steering.get("id") == queued_id:
            next_state.pop("steeringMessage", None)
        queued = next_state.get("queuedMessages")
        if isinstance(queued, list):
            remaining = [m for m in queued if not key_equals("id", queued_id)(m)]
            next_state = assign(next_state, {"queuedMessages": remaining or None})
    return next_state


def _force_cancel(part: Any) -> Any:
    """Cancel (reason ``skipped``) a tool call the turn ended without finishing."""
    if not isinstance(part, dict) or part.get("kind") != "toolCall":
        return part
    tc = as_object(part.get("toolCall"))
    if tc is None or tc.get("status") in (COMPLETED, CANCELLED):
        return part
    streaming = tc.get("status") == STREAMING
    invocation = tc.get("invocationMessage")
    cancelled = {
        "status": CANCELLED,
        **_tc_base(tc),
        **compact(
            # A streaming call may not have its message yet; cancelled needs one.
            invocationMessage="" if streaming and invocation is None else invocation,
            # A streaming call has only a partial input, which is not kept.
            toolInput=None if streaming else tc.get("toolInput"),
            reason="skipped",
        ),
    }
    return {"kind": "toolCall", "toolCall": cancelled}


def _end_turn(
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
    active = as_object(state.get("activeTurn"))
    if active is None or active.get("id") != action.get("turnId"):
        return state
    parts = [_force_cancel(part) for part in _parts(active)]
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
    next_state["status"] = _summary_status(next_state, terminal)
    return next_state


def _turn_resume(state: JsonObject, action: Action) -> JsonObject:
    """Reopen the latest turn if it stopped at a resumable error.

    The turn goes back to being the active turn with its message, parts
    (including the error) and usage intact, and finishes later as one turn.
    """
    turns = as_list(state.get("turns"))
    if state.get("activeTurn") is not None or not turns:
        return state
    turn = turns[-1]
    if not isinstance(turn, dict) or turn.get("id") != action.get("turnId"):
        return state
    parts = _parts(turn)
    last = parts[-1] if parts else None
    resumable = isinstance(last, dict) and last.get("kind") == "error" and last.get("resumable")
    if turn.get("state") != "error" or resumable is not True:
        return state
    active_turn = compact(
        id=turn.get("id"),
        startedAt=turn.get("startedAt") or state.get("modifiedAt"),
        message=turn.get("message"),
        responseParts=parts,
        usage=turn.get("usage"),
    )
    next_state: JsonObject = {**state, "turns": turns[:-1], "activeTurn": active_turn}
    next_state["status"] = _unread_status(next_state)
    return next_state


def _truncated(state: JsonObject, action: Action) -> JsonObject:
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
    next_state["status"] = _summary_status(next_state)
    return next_state


def _turns_loaded(state: JsonObject, action: Action) -> JsonObject:
    turns = as_list(state.get("turns"))
    known = {turn.get("id") for turn in turns if isinstance(turn, dict)}
    older = [
        turn
        for turn in as_list(action.get("turns"))
        if not (isinstance(turn, dict) and turn.get("id") in known)
    ]
    next_state = {**state, "turns": [*older, *turns]}
    return assign(next_state, {"turnsNextCursor": action.get("turnsNextCursor")})


# ─── Input requests ──────────────────────────────────────────────────────────


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


def _input_requested(state: JsonObject, action: Action) -> JsonObject:
    active = as_object(state.get("activeTurn"))
    request = as_object(action.get("request"))
    if active is None or request is None:
        # The request lives in the turn, so without one there is nowhere to put it.
        return state
    parts = _parts(active)
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
    next_state: JsonObject = {**state, "activeTurn": {**active, "responseParts": parts}}
    next_state["status"] = _unread_status(next_state)
    return next_state


def _input_answer_changed(state: JsonObject, action: Action) -> JsonObject:
    active = as_object(state.get("activeTurn"))
    if active is None:
        return state
    parts = _parts(active)
    index = _find_open_input_request(parts, action.get("requestId"))
    if index < 0:
        return state
    part = parts[index]
    request = part["request"]
    answers = dict(as_object(request.get("answers")) or {})
    question_id = action.get("questionId")
    if not isinstance(question_id, str):
        return state
    if action.get("answer") is None:
        answers.pop(question_id, None)
    else:
        answers[question_id] = action["answer"]
    new_request = assign(request, {"answers": answers or None})
    new_parts = replace_at(parts, index, {**part, "request": new_request})
    return {**state, "activeTurn": {**active, "responseParts": new_parts}}


def _input_completed(state: JsonObject, action: Action) -> JsonObject:
    active = as_object(state.get("activeTurn"))
    if active is None:
        return state
    parts = _parts(active)
    index = _find_open_input_request(parts, action.get("requestId"))
    if index < 0:
        return state
    part = parts[index]
    request = part["request"]
    # Submitted answers override the synced drafts question by question.
    answers = {
        **(as_object(request.get("answers")) or {}),
        **(as_object(action.get("answers")) or {}),
    }
    resolved = assign(
        {**part, "request": assign(request, {"answers": answers or None})},
        {"response": action.get("response")},
    )
    next_state: JsonObject = {
        **state,
        "activeTurn": {**active, "responseParts": replace_at(parts, index, resolved)},
    }
    next_state["status"] = _summary_status(next_state)
    return next_state


# ─── Pending messages ────────────────────────────────────────────────────────


def _pending_message_set(state: JsonObject, action: Action) -> JsonObject:
    entry = compact(id=action.get("id"), message=action.get("message"))
    if action.get("kind") == "steering":
        return {**state, "steeringMessage": entry}
    queued = upsert(as_list(state.get("queuedMessages")), entry, "id")
    return {**state, "queuedMessages": queued}


def _pending_message_removed(state: JsonObject, action: Action) -> JsonObject:
    if action.get("kind") == "steering":
        steering = as_object(state.get("steeringMessage"))
        if steering is None or steering.get("id") != action.get("id"):
            return state
        return without(state, "steeringMessage")
    queued = state.get("queuedMessages")
    if not isinstance(queued, list):
        return state
    remaining = [m for m in queued if not key_equals("id", action.get("id"))(m)]
    if len(remaining) == len(queued):
        return state
    return assign(state, {"queuedMessages": remaining or None})


def _queued_messages_reordered(state: JsonObject, action: Action) -> JsonObject:
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


# ─── Reducer ─────────────────────────────────────────────────────────────────

_TOOL_CALL_UPDATERS: dict[str, Callable[[Action], ToolCallUpdater]] = {
    "chat/toolCallDelta": _tool_call_delta,
    "chat/toolCallContentChanged": _tool_call_content_changed,
}

#: Tool-call transitions that can enter or leave a blocking status, so the
#: chat status is recomputed after them.
_STATUS_TOOL_CALL_UPDATERS: dict[str, Callable[[Action], ToolCallUpdater]] = {
    "chat/toolCallReady": _tool_call_ready,
    "chat/toolCallConfirmed": _tool_call_confirmed,
    "chat/toolCallComplete": _tool_call_complete,
    "chat/toolCallResultConfirmed": _tool_call_result_confirmed,
    "chat/toolCallAuthRequired": _tool_call_auth_required,
    "chat/toolCallAuthResolved": _tool_call_auth_resolved,
}


def reduce_chat(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one chat action to ``state`` and return the resulting state.

    ``now_ms`` (epoch milliseconds) only fills in a timestamp the action should
    have carried but did not. Unknown action types leave the state unchanged.
    """
    kind: Any = action.get("type")

    # Turn lifecycle.
    if kind == "chat/turnStarted":
        return _turn_started(state, action, now_ms)
    if kind == "chat/turnComplete":
        return _end_turn(state, action, "complete", now_ms)
    if kind == "chat/turnCancelled":
        return _end_turn(state, action, "cancelled", now_ms)
    if kind == "chat/error":
        return _end_turn(
            state, action, "error", now_ms, terminal=STATUS_ERROR, error_part=action.get("part")
        )
    if kind == "chat/turnResume":
        return _turn_resume(state, action)
    if kind == "chat/truncated":
        return _truncated(state, action)
    if kind == "chat/turnsLoaded":
        return _turns_loaded(state, action)

    # Streaming content.
    if kind == "chat/delta":
        return _append_to_part(state, action, "markdown")
    if kind == "chat/reasoning":
        return _append_to_part(state, action, "reasoning")
    if kind == "chat/responsePart":
        return _response_part(state, action)
    if kind == "chat/usage":
        active = as_object(state.get("activeTurn"))
        if active is None or active.get("id") != action.get("turnId"):
            return state
        return {**state, "activeTurn": assign(active, {"usage": action.get("usage")})}

    # Tool calls.
    if kind == "chat/toolCallStart":
        return _tool_call_start(state, action)
    if kind in _TOOL_CALL_UPDATERS:
        updater = _TOOL_CALL_UPDATERS[kind](action)
        return _update_tool_call(state, action.get("turnId"), action.get("toolCallId"), updater)
    if kind in _STATUS_TOOL_CALL_UPDATERS:
        updater = _STATUS_TOOL_CALL_UPDATERS[kind](action)
        updated = _update_tool_call(state, action.get("turnId"), action.get("toolCallId"), updater)
        return _refresh_status(updated)

    # Input requests.
    if kind == "chat/inputRequested":
        return _input_requested(state, action)
    if kind == "chat/inputAnswerChanged":
        return _input_answer_changed(state, action)
    if kind == "chat/inputCompleted":
        return _input_completed(state, action)

    # Pending messages and draft.
    if kind == "chat/pendingMessageSet":
        return _pending_message_set(state, action)
    if kind == "chat/pendingMessageRemoved":
        return _pending_message_removed(state, action)
    if kind == "chat/queuedMessagesReordered":
        return _queued_messages_reordered(state, action)
    if kind == "chat/draftChanged":
        return assign(state, {"draft": action.get("draft")})

    # Chat metadata.
    if kind == "chat/activityChanged":
        return assign(state, {"activity": action.get("activity")})
    if kind == "chat/movableChanged":
        return assign(state, {"movable": action.get("movable")})
    if kind == "chat/changesetsChanged":
        return assign(state, {"changesets": action.get("changesets")})
    if kind == "chat/canvasesChanged":
        return assign(state, {"canvases": action.get("canvases")})
    if kind == "chat/isReadChanged":
        status = with_status_flag(status_of(state), STATUS_IS_READ, bool(action.get("isRead")))
        return {**state, "status": status}
    if kind == "chat/isArchivedChanged":
        on = bool(action.get("isArchived"))
        return {**state, "status": with_status_flag(status_of(state), STATUS_IS_ARCHIVED, on)}
    if kind == "chat/backgroundWorkSet":
        work = as_object(action.get("work"))
        if work is None:
            return state
        return {**state, "backgroundWork": upsert(as_list(state.get("backgroundWork")), work, "id")}
    if kind == "chat/backgroundWorkRemoved":
        works = as_list(state.get("backgroundWork"))
        index = find_index(works, key_equals("id", action.get("id")))
        if index < 0:
            return state
        return {**state, "backgroundWork": remove_at(works, index)}

    # Working directories: this chat's subset of the session's set.
    if kind == "chat/workingDirectorySet":
        return directory_added(state, action.get("directory"))
    if kind == "chat/workingDirectoryRemoved":
        return directory_removed(state, action.get("directory"))

    return state
