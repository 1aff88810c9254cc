"""Reducer for ``AutomationState`` (the ``ahp-automations://`` catalogue).

Port of ``types/channels-automation/reducer.ts``. Entries are keyed by their
``resource`` URI. The client's ``createRequested``/``updateRequested`` are
requests: the host answers them later with ``automation/set``, so they leave
the catalogue unchanged.
"""

from __future__ import annotations

from typing import Any

from ._common import Action, JsonObject, as_list, find_index, key_equals, remove_at, upsert


def _entries_key(state: JsonObject) -> str:
    # 1.0 names the list `entries`; pre-1.0 drafts called it `automations`.
    # Operate on whichever the state carries so an older snapshot still works.
    if "entries" not in state and "automations" in state:
        return "automations"
    return "entries"


def reduce_automation(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one automation-catalogue action to ``state`` and return the result.

    ``now_ms`` is accepted for a uniform signature and unused. Unknown action
    types leave the state unchanged.
    """
    kind: Any = action.get("type")
    key = _entries_key(state)
    entries = as_list(state.get(key))
    if kind == "automation/set":
        entry = action.get("automation")
        if not isinstance(entry, dict):
            return state
        return {**state, key: upsert(entries, entry, "resource")}
    if kind == "automation/removed":
        index = find_index(entries, key_equals("resource", action.get("resource")))
        if index < 0:
            return state
        return {**state, key: remove_at(entries, index)}
    # automation/createRequested, automation/updateRequested and unknown types.
    return state
