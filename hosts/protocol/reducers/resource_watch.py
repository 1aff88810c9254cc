"""Reducer for ``ResourceWatchState`` (``ahp-resource-watch:`` channels).

Port of ``types/channels-resource-watch/reducer.ts``. A watch only describes
what is watched; ``resourceWatch/changed`` is an event that subscribers consume
as it passes, so no action changes the retained state.
"""

from __future__ import annotations

from ._common import Action, JsonObject


def reduce_resource_watch(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Return ``state`` unchanged for every action, known or not."""
    return state
