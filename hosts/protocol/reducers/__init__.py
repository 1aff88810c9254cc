"""Pure reducers for every AHP channel state.

Python port of the protocol's canonical TypeScript reducers
(``types/channels-*/reducer.ts`` in microsoft/agent-host-protocol, 1.0.0).
A reducer takes a JSON-shaped state and one action and returns the next
state. It never mutates its inputs: changed containers are copied, untouched
sub-objects are shared, and a state nothing applies to is returned as is.

Use :func:`reduce` with the channel kind, or a ``reduce_<kind>`` function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._common import Reducer
from .annotations import reduce_annotations
from .automation import reduce_automation
from .automation_run import reduce_automation_run
from .changeset import reduce_changeset
from .chat import reduce_chat
from .resource_watch import reduce_resource_watch
from .root import reduce_root
from .session import reduce_session
from .terminal import reduce_terminal

#: Channel kind -> reducer. ``automation`` is the ``ahp-automations://``
#: catalogue (AutomationState), ``automationRun`` one run (AutomationRunState).
REDUCERS: dict[str, Reducer] = {
    "root": reduce_root,
    "session": reduce_session,
    "chat": reduce_chat,
    "terminal": reduce_terminal,
    "changeset": reduce_changeset,
    "annotations": reduce_annotations,
    "resourceWatch": reduce_resource_watch,
    "automation": reduce_automation,
    "automationRun": reduce_automation_run,
}


def reduce(kind: str, state: Any, action: Mapping[str, Any], *, now_ms: int) -> Any:
    """Apply ``action`` to the ``kind`` channel's ``state`` and return the new state.

    ``now_ms`` is the host clock in epoch milliseconds, used only where an
    action lacks a timestamp it should carry. An action ``type`` the reducer
    does not know returns ``state`` itself (forward compatibility).

    Raises:
        ValueError: ``kind`` names no channel reducer.
    """
    reducer = REDUCERS.get(kind)
    if reducer is None:
        raise ValueError(f"unknown reducer kind: {kind!r}")
    return reducer(state, action, now_ms=now_ms)


__all__ = [
    "REDUCERS",
    "reduce",
    "reduce_annotations",
    "reduce_automation",
    "reduce_automation_run",
    "reduce_changeset",
    "reduce_chat",
    "reduce_resource_watch",
    "reduce_root",
    "reduce_session",
    "reduce_terminal",
]
