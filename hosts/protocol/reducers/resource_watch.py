"""Reducer for ``ResourceWatchState`` (``ahp-resource-watch:`` channels).

Port of ``types/channels-resource-watch/reducer.ts``. A watch only describes
what is watched; ``resourceWatch/changed`` is an event that subscribers consume
as it passes, so no action changes the retained state.
"""

from __future__ import annotations

from ._action_table import ActionTable, table_reducer, unchanged

RESOURCE_WATCH_ACTIONS: ActionTable = {
    "resourceWatch/changed": unchanged,
}


reduce_resource_watch = table_reducer(RESOURCE_WATCH_ACTIONS)
