"""Reducer for ``RootState`` (the ``ahp-root://`` channel).

Port of ``types/channels-root/reducer.ts``.
"""

from __future__ import annotations

from typing import Any

from ._common import Action, JsonObject, assign, merge_config


def reduce_root(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one root action to ``state`` and return the resulting state.

    ``now_ms`` is accepted for a uniform signature; no root action stamps a time.
    Unknown action types leave the state unchanged.
    """
    kind: Any = action.get("type")
    if kind == "root/agentsChanged":
        return assign(state, {"agents": action.get("agents")})
    if kind == "root/activeSessionsChanged":
        return assign(state, {"activeSessions": action.get("activeSessions")})
    if kind == "root/terminalsChanged":
        return assign(state, {"terminals": action.get("terminals")})
    if kind == "root/configChanged":
        return merge_config(state, action)
    return state
