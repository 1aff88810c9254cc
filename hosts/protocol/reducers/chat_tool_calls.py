"""The tool-call state machine of a chat turn.

Each ``chat/toolCall*`` action that moves a tool call is a transition here: a
function of the action that returns an updater, ``tool call -> tool call``.
An updater returns its argument unchanged to refuse a transition the call's
status does not allow; the response-part handlers then leave the state as is.
Each transition names the statuses it moves from (``@_moves_from``); together:

    streaming -> pending-confirmation | running
    pending-confirmation -> running | cancelled | completed | pending-result-confirmation
    running -> pending-confirmation | auth-required | completed | pending-result-confirmation
    auth-required -> running | completed (a failed result only)
    pending-result-confirmation -> completed | cancelled
    any unfinished status -> cancelled (skipped) when its turn ends
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeAlias

from ._common import Action, JsonObject, as_object, assign, compact, find_index, key_equals, pick

ToolCall: TypeAlias = JsonObject
ToolCallUpdater: TypeAlias = Callable[[ToolCall], ToolCall]
ToolCallTransition: TypeAlias = Callable[[Action], ToolCallUpdater]

# Tool-call statuses.
STREAMING = "streaming"
PENDING_CONFIRMATION = "pending-confirmation"
RUNNING = "running"
AUTH_REQUIRED = "auth-required"
PENDING_RESULT_CONFIRMATION = "pending-result-confirmation"
COMPLETED = "completed"
CANCELLED = "cancelled"

#: Statuses in which a tool call waits on something outside the turn.
BLOCKING_STATUSES = frozenset({PENDING_CONFIRMATION, PENDING_RESULT_CONFIRMATION, AUTH_REQUIRED})

#: What a call that got past its confirmation carries into every later status.
_CONFIRMED_FIELDS = ("invocationMessage", "toolInput", "confirmed", "selectedOption")


def _moves_from(
    *statuses: str,
) -> Callable[[Callable[[Action, ToolCall], ToolCall]], ToolCallTransition]:
    """Make ``step(action, tc)`` a transition that applies to a call in one of ``statuses``.

    A call in any other status is returned as is: the transition is refused.
    """

    def decorate(step: Callable[[Action, ToolCall], ToolCall]) -> ToolCallTransition:
        @functools.wraps(step)
        def transition(action: Action) -> ToolCallUpdater:
            def update(tc: ToolCall) -> ToolCall:
                return step(action, tc) if tc.get("status") in statuses else tc

            return update

        return transition

    return decorate


def _base(tc: ToolCall, meta: Any = None) -> JsonObject:
    """The fields every tool-call status carries; ``meta`` replaces ``_meta`` if given."""
    return compact(
        toolCallId=tc.get("toolCallId"),
        toolName=tc.get("toolName"),
        displayName=tc.get("displayName"),
        intention=tc.get("intention"),
        contributor=tc.get("contributor"),
        _meta=_first_set(meta, tc.get("_meta")),
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


def started(action: Action) -> ToolCall:
    """The streaming tool call ``chat/toolCallStart`` opens."""
    return {
        **pick(
            action, "toolCallId", "toolName", "displayName", "intention", "contributor", "_meta"
        ),
        "status": STREAMING,
    }


@_moves_from(STREAMING)
def delta(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallDelta``: more of a streaming call's input, message or ``_meta``."""
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


@_moves_from(STREAMING, RUNNING, PENDING_CONFIRMATION)
def ready(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallReady``: the input is settled; the call runs or asks for confirmation."""
    status = tc.get("status")
    base = {
        **_base(tc, action.get("_meta")),
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


@_moves_from(PENDING_CONFIRMATION)
def confirmed(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallConfirmed``: the user approved (running) or denied (cancelled) the call."""
    base = _base(tc, action.get("_meta"))
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
        **pick(tc, "invocationMessage", "toolInput"),
        **compact(
            reason=action.get("reason"),
            reasonMessage=action.get("reasonMessage"),
            userSuggestion=action.get("userSuggestion"),
            selectedOption=selected,
        ),
    }


@_moves_from(RUNNING, PENDING_CONFIRMATION, AUTH_REQUIRED)
def completed(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallComplete``: the result is in; completed, or held for review."""
    status = tc.get("status")
    result = as_object(action.get("result")) or {}
    from_auth = status == AUTH_REQUIRED
    # From auth-required only a *failed* result is accepted: that is the
    # client cancelling instead of authenticating. A success is impossible
    # (execution never resumed), so it is ignored and the call stays put
    # until chat/toolCallAuthResolved.
    if from_auth and result.get("success"):
        return tc
    executed = status in (RUNNING, AUTH_REQUIRED)
    fields = {
        **pick(tc, "invocationMessage", "toolInput"),
        **compact(
            # Completing straight from pending-confirmation never asked anyone.
            confirmed=tc.get("confirmed") if executed else "not-needed",
            selectedOption=tc.get("selectedOption") if executed else None,
            # Content produced before the auth pause is all the tool ever made.
            content=tc.get("content") if from_auth else None,
        ),
    }
    # null in the result means "not given", as an absent key would.
    fields.update((key, value) for key, value in result.items() if value is not None)
    # Cancelling from auth-required always ends terminally: there is no
    # result worth reviewing, so requiresResultConfirmation is ignored.
    wants_review = bool(action.get("requiresResultConfirmation")) and not from_auth
    new_status = PENDING_RESULT_CONFIRMATION if wants_review else COMPLETED
    return {"status": new_status, **_base(tc, action.get("_meta")), **fields}


@_moves_from(PENDING_RESULT_CONFIRMATION)
def result_confirmed(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallResultConfirmed``: the reviewed result kept (completed) or denied."""
    base = _base(tc, action.get("_meta"))
    if action.get("approved"):
        return {
            "status": COMPLETED,
            **base,
            **pick(
                tc,
                *_CONFIRMED_FIELDS,
                "success",
                "pastTenseMessage",
                "content",
                "structuredContent",
                "error",
            ),
        }
    return {
        "status": CANCELLED,
        **base,
        **pick(tc, "invocationMessage", "toolInput"),
        "reason": "result-denied",
        **pick(tc, "selectedOption"),
    }


@_moves_from(RUNNING)
def content_changed(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallContentChanged``: what a running call has produced so far."""
    changes: JsonObject = {"content": action.get("content")}
    if action.get("_meta") is not None:
        changes["_meta"] = action["_meta"]
    return assign(tc, changes)


@_moves_from(RUNNING)
def auth_required(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallAuthRequired``: a running MCP call pauses for authentication."""
    contributor = tc.get("contributor")
    # Only MCP-contributed calls can pause on (MCP) authentication.
    if not isinstance(contributor, dict) or contributor.get("kind") != "mcp":
        return tc
    return {
        "status": AUTH_REQUIRED,
        **_base(tc, action.get("_meta")),
        **pick(tc, *_CONFIRMED_FIELDS, "content"),
        **compact(auth=action.get("auth")),
    }


@_moves_from(AUTH_REQUIRED)
def auth_resolved(action: Action, tc: ToolCall) -> ToolCall:
    """``chat/toolCallAuthResolved``: authenticated, the call runs on."""
    return {
        "status": RUNNING,
        **_base(tc, action.get("_meta")),
        **pick(tc, *_CONFIRMED_FIELDS, "content"),
    }


def skipped(tc: ToolCall) -> ToolCall:
    """``tc`` cancelled (reason ``skipped``) by its turn ending; a finished call as it is."""
    if tc.get("status") in (COMPLETED, CANCELLED):
        return tc
    streaming = tc.get("status") == STREAMING
    invocation = tc.get("invocationMessage")
    return {
        "status": CANCELLED,
        **_base(tc),
        **compact(
            # A streaming call may not have its message yet; cancelled needs one.
            invocationMessage="" if streaming and invocation is None else invocation,
            # A streaming call has only a partial input, which is not kept.
            toolInput=None if streaming else tc.get("toolInput"),
            reason="skipped",
        ),
    }
