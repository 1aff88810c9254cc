"""Reducer for ``AutomationState`` (the ``ahp-automations://`` catalogue).

Port of ``types/channels-automation/reducer.ts``. Entries are keyed by their
``resource`` URI. The client's ``createRequested``/``updateRequested`` are
requests: the host answers them later with ``automation/set``, so they leave
the catalogue unchanged.
"""

from __future__ import annotations

from ._action_table import ActionTable, table_reducer, unchanged
from ._common import Action, JsonObject, with_item_removed, with_item_set


def _entries_key(state: JsonObject) -> str:
    # 1.0 names the list `entries`; pre-1.0 drafts called it `automations`.
    # Operate on whichever the state carries so an older snapshot still works.
    if "entries" not in state and "automations" in state:
        return "automations"
    return "entries"


def _set(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return with_item_set(state, _entries_key(state), action.get("automation"), "resource")


def _removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return with_item_removed(state, _entries_key(state), "resource", action.get("resource"))


AUTOMATION_ACTIONS: ActionTable = {
    "automation/set": _set,
    "automation/removed": _removed,
    # Requests: the host answers them with automation/set.
    "automation/createRequested": unchanged,
    "automation/updateRequested": unchanged,
}


reduce_automation = table_reducer(AUTOMATION_ACTIONS)
