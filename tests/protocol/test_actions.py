"""The action and notification registries against the protocol's shared artefacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hosts.protocol.actions import ACTIONS, CHANNEL_KINDS, ActionSpec, action_spec, known_to
from hosts.protocol.notifications import (
    NOTIFICATIONS,
    notification_known_to,
    notification_spec,
)
from tests.schema_check import AHP_DIR

CASES_DIRS = (AHP_DIR / "cases" / "reducers", AHP_DIR / "cases" / "reducers-more")
ACTIONS_SCHEMA = AHP_DIR / "schema" / "actions.schema.json"

# Reducer cases that deliberately feed a type the protocol does not define.
UNKNOWN_TYPE_CASE_MARKER = "unknown action type"

PREFIX_TO_KIND = {
    "root": "root",
    "session": "session",
    "chat": "chat",
    "terminal": "terminal",
    "changeset": "changeset",
    "annotations": "annotations",
    "resourceWatch": "resourceWatch",
    "automation": "automation",
    "automationRun": "automationRun",
    "canvas": "canvas",
}


def _case_files() -> list[Path]:
    files = sorted(path for folder in CASES_DIRS for path in folder.glob("*.json"))
    if not files:
        pytest.fail(f"no reducer cases under {CASES_DIRS[0]} (set AHP_SHARED_DIR?)")
    return files


def _case_action_types() -> tuple[set[str], set[str]]:
    """(types the ordinary cases use, types the unknown-type cases use)."""
    known: set[str] = set()
    unknown: set[str] = set()
    for path in _case_files():
        case = json.loads(path.read_text())
        target = unknown if UNKNOWN_TYPE_CASE_MARKER in case["description"] else known
        for action in case["actions"]:
            target.add(action["type"])
    return known, unknown


def test_registry_covers_every_action_type_the_reducer_cases_use() -> None:
    known, unknown = _case_action_types()
    assert known, "the reducer cases use no action types"
    assert sorted(known - ACTIONS.keys()) == []
    # And the deliberately unknown ones really are unknown.
    assert unknown, "expected the unknown-action-type cases"
    assert sorted(unknown & ACTIONS.keys()) == []


def test_registry_matches_the_action_types_of_the_schema() -> None:
    defs = json.loads(ACTIONS_SCHEMA.read_text())["$defs"]
    schema_types = {
        d["properties"]["type"]["const"]
        for name, d in defs.items()
        if name.endswith("Action") and "const" in d.get("properties", {}).get("type", {})
    }
    assert schema_types == set(ACTIONS)


def test_registry_size_and_keys() -> None:
    assert len(ACTIONS) == 106
    for key, spec in ACTIONS.items():
        assert isinstance(spec, ActionSpec)
        assert spec.type == key


def test_channel_kind_follows_the_type_prefix() -> None:
    assert set(PREFIX_TO_KIND.values()) == CHANNEL_KINDS
    for spec in ACTIONS.values():
        prefix = spec.type.split("/", 1)[0]
        assert spec.channel_kind == PREFIX_TO_KIND[prefix], spec.type
    assert {spec.channel_kind for spec in ACTIONS.values()} == CHANNEL_KINDS


def test_introduced_in_never_exceeds_1_0_0() -> None:
    for spec in ACTIONS.values():
        assert (0, 1, 0) <= spec.introduced_in <= (0, 10, 0), spec.type


@pytest.mark.parametrize(
    ("action_type", "client_dispatchable", "introduced_in"),
    [
        ("root/configChanged", True, (0, 1, 0)),
        ("root/agentsChanged", False, (0, 1, 0)),
        ("chat/delta", False, (0, 4, 0)),
        ("chat/turnStarted", True, (0, 4, 0)),
        ("chat/truncated", True, (0, 4, 0)),
        ("chat/canvasesChanged", False, (0, 10, 0)),
        ("canvas/stateChanged", False, (0, 10, 0)),
        ("chat/turnResume", True, (0, 9, 0)),
        ("session/activeClientSet", True, (0, 5, 0)),
        ("session/inputNeededSet", False, (0, 5, 1)),
        ("session/mcpServerStartRequested", True, (0, 5, 2)),
        ("session/chatsReordered", False, (0, 9, 0)),
        ("changeset/filesReviewChanged", True, (0, 6, 0)),
        ("changeset/fileSet", False, (0, 2, 0)),
        ("automationRun/cancelRequested", True, (0, 8, 0)),
        ("automation/set", False, (0, 8, 0)),
        ("terminal/input", True, (0, 1, 0)),
        ("terminal/data", False, (0, 1, 0)),
        ("resourceWatch/changed", False, (0, 2, 0)),
    ],
)
def test_known_flags(
    action_type: str, client_dispatchable: bool, introduced_in: tuple[int, int, int]
) -> None:
    spec = action_spec(action_type)
    assert spec is not None
    assert spec.client_dispatchable is client_dispatchable
    assert spec.introduced_in == introduced_in


def test_action_spec_unknown_type() -> None:
    assert action_spec("root/nonExistentAction") is None
    assert action_spec("session/modelChanged") is None  # pre-0.4 legacy, not in 1.0.0
    assert action_spec("") is None


def test_known_to() -> None:
    # introduced_in <= version
    assert known_to("chat/canvasesChanged", (1, 0, 0))
    assert known_to("chat/canvasesChanged", (0, 10, 0))
    assert not known_to("chat/canvasesChanged", (0, 9, 0))
    assert not known_to("canvas/stateChanged", (0, 9, 12))
    assert known_to("chat/turnResume", (0, 9, 0))
    assert not known_to("chat/turnResume", (0, 8, 99))
    assert known_to("session/inputNeededSet", (0, 5, 1))
    assert not known_to("session/inputNeededSet", (0, 5, 0))
    assert known_to("root/agentsChanged", (0, 1, 0))
    # tuple comparison, not string comparison: 0.10.0 > 0.9.0
    assert known_to("chat/canvasesChanged", (0, 11, 0))
    # unknown types are known to no version
    assert not known_to("root/nonExistentAction", (1, 0, 0))
    assert not known_to("root/nonExistentAction", (99, 0, 0))


def test_every_action_is_known_to_1_0_0_and_the_0_9_set_excludes_only_canvas() -> None:
    assert all(known_to(t, (1, 0, 0)) for t in ACTIONS)
    unknown_to_0_9 = {t for t in ACTIONS if not known_to(t, (0, 9, 0))}
    assert unknown_to_0_9 == {"chat/canvasesChanged", "canvas/stateChanged"}


def test_notifications_registry() -> None:
    assert set(NOTIFICATIONS) == {
        "action",
        "root/sessionAdded",
        "root/sessionRemoved",
        "root/sessionSummaryChanged",
        "root/progress",
        "auth/required",
        "otlp/exportLogs",
        "otlp/exportTraces",
        "otlp/exportMetrics",
        "dispatchAction",
        "unsubscribe",
    }
    for key, spec in NOTIFICATIONS.items():
        assert spec.method == key
    client = {m for m, s in NOTIFICATIONS.items() if s.direction == "client"}
    assert client == {"dispatchAction", "unsubscribe"}
    root_progress = notification_spec("root/progress")
    assert root_progress is not None and root_progress.introduced_in == (0, 5, 0)
    otlp = notification_spec("otlp/exportTraces")
    assert otlp is not None and otlp.introduced_in == (0, 2, 0)
    # 1.1.0-only notifications are not part of 1.0.0
    assert notification_spec("channel/frame") is None
    assert notification_spec("tcp/data") is None
    assert notification_known_to("root/progress", (0, 5, 0))
    assert not notification_known_to("root/progress", (0, 4, 0))
    assert not notification_known_to("channel/frame", (1, 1, 0))
