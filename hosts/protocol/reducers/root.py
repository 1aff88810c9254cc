"""Reducer for ``RootState`` (the ``ahp-root://`` channel).

Port of ``types/channels-root/reducer.ts``.
"""

from __future__ import annotations

from ._action_table import ActionTable, config_changed, sets_field, table_reducer

ROOT_ACTIONS: ActionTable = {
    "root/agentsChanged": sets_field("agents"),
    "root/activeSessionsChanged": sets_field("activeSessions"),
    "root/terminalsChanged": sets_field("terminals"),
    "root/configChanged": config_changed,
}


reduce_root = table_reducer(ROOT_ACTIONS)
