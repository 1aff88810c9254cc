"""Reducer for ``AutomationRunState`` (``ahp-automation-run:`` channels).

Port of ``types/channels-automation-run/reducer.ts``. ``sessions`` is an
ordered set of session URIs; ``primarySession`` should name one of them.
"""

from __future__ import annotations

from typing import Any

from ._common import Action, JsonObject, as_list, assign


def reduce_automation_run(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one automation-run action to ``state`` and return the result.

    ``now_ms`` is accepted for a uniform signature; lifecycle timestamps come
    from the action. Unknown action types leave the state unchanged.
    """
    kind: Any = action.get("type")
    sessions = as_list(state.get("sessions"))
    if kind == "automationRun/lifecycleChanged":
        changes: dict[str, Any] = {"lifecycle": action.get("lifecycle")}
        # Pre-1.0 drafts carried the permitted run operations on this action;
        # 1.0 has no such field, so only replace them when one is sent.
        if "operations" in action:
            changes["operations"] = action.get("operations")
        return assign(state, changes)
    if kind == "automationRun/sessionSet":
        session = action.get("session")
        if session is None or session in sessions:
            return state
        return {**state, "sessions": [*sessions, session]}
    if kind == "automationRun/sessionRemoved":
        session = action.get("session")
        if session not in sessions:
            return state
        remaining = list(sessions)
        remaining.remove(session)
        next_state = {**state, "sessions": remaining}
        if state.get("primarySession") == session:
            # The recommended session must stay a member of the run.
            next_state.pop("primarySession", None)
        return next_state
    if kind == "automationRun/primarySessionChanged":
        return assign(state, {"primarySession": action.get("primarySession")})
    # automationRun/cancelRequested is a request; the host reports the outcome
    # with a later lifecycleChanged. Unknown types land here too.
    return state
