"""Reducer for ``AutomationRunState`` (``ahp-automation-run:`` channels).

Port of ``types/channels-automation-run/reducer.ts``. ``sessions`` is an
ordered set of session URIs; ``primarySession`` should name one of them.
"""

from __future__ import annotations

from typing import Any

from ._action_table import ActionTable, sets_field, table_reducer, unchanged
from ._common import Action, JsonObject, as_list, assign


def _lifecycle_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    changes: dict[str, Any] = {"lifecycle": action.get("lifecycle")}
    # Pre-1.0 drafts carried the permitted run operations on this action;
    # 1.0 has no such field, so only replace them when one is sent.
    if "operations" in action:
        changes["operations"] = action.get("operations")
    return assign(state, changes)


def _session_set(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    sessions = as_list(state.get("sessions"))
    session = action.get("session")
    if session is None or session in sessions:
        return state
    return {**state, "sessions": [*sessions, session]}


def _session_removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    sessions = as_list(state.get("sessions"))
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


AUTOMATION_RUN_ACTIONS: ActionTable = {
    "automationRun/lifecycleChanged": _lifecycle_changed,
    "automationRun/sessionSet": _session_set,
    "automationRun/sessionRemoved": _session_removed,
    "automationRun/primarySessionChanged": sets_field("primarySession"),
    # A request; the host reports the outcome with a later lifecycleChanged.
    "automationRun/cancelRequested": unchanged,
}


reduce_automation_run = table_reducer(AUTOMATION_RUN_ACTIONS)
