"""The reducers' dispatch: every kind reduces through an action table of its own types."""

from __future__ import annotations

from typing import Any

import pytest

from hosts.protocol.reducers import REDUCERS, reduce
from hosts.protocol.reducers.annotations import ANNOTATIONS_ACTIONS
from hosts.protocol.reducers.automation import AUTOMATION_ACTIONS
from hosts.protocol.reducers.automation_run import AUTOMATION_RUN_ACTIONS
from hosts.protocol.reducers.changeset import CHANGESET_ACTIONS
from hosts.protocol.reducers.chat import CHAT_ACTIONS
from hosts.protocol.reducers.resource_watch import RESOURCE_WATCH_ACTIONS
from hosts.protocol.reducers.root import ROOT_ACTIONS
from hosts.protocol.reducers.session import SESSION_ACTIONS
from hosts.protocol.reducers.terminal import TERMINAL_ACTIONS

TABLES = {
    "root": ROOT_ACTIONS,
    "session": SESSION_ACTIONS,
    "chat": CHAT_ACTIONS,
    "terminal": TERMINAL_ACTIONS,
    "changeset": CHANGESET_ACTIONS,
    "annotations": ANNOTATIONS_ACTIONS,
    "resourceWatch": RESOURCE_WATCH_ACTIONS,
    "automation": AUTOMATION_ACTIONS,
    "automationRun": AUTOMATION_RUN_ACTIONS,
}


def test_every_kind_has_an_action_table() -> None:
    assert set(TABLES) == set(REDUCERS)


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_a_table_names_only_its_own_kinds_action_types(kind: str) -> None:
    assert all(action_type.startswith(f"{kind}/") for action_type in TABLES[kind])


@pytest.mark.parametrize("kind", sorted(REDUCERS))
@pytest.mark.parametrize("action_type", [{}, ["chat/delta"], 7, None])
def test_an_action_type_that_is_not_a_string_leaves_the_state_as_is(
    kind: str, action_type: Any
) -> None:
    # The chat reducer used to look such a type up in a dict and raise TypeError
    # for an unhashable one, where every other kind returned the state.
    state: dict[str, Any] = {"status": 1, "activeTurn": {"id": "t1", "responseParts": []}}
    assert reduce(kind, state, {"type": action_type, "turnId": "t1"}, now_ms=0) is state
