"""The wire-frame schema checker (tests/schema_check.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.schema_check import (
    SchemaError,
    check_action,
    check_action_envelope,
    check_error,
    check_notification,
    check_result,
    check_server_frame,
    state_definition_for,
)

ROOT = "ahp-root://"
SESSION = "ahp-session:/6c1e0c1e-0000-4000-8000-000000000001"
CHAT = "ahp-chat:/6c1e0c1e-0000-4000-8000-000000000002"


def root_config_envelope() -> dict[str, Any]:
    return {
        "channel": ROOT,
        "action": {"type": "root/configChanged", "config": {"theme": "dark"}},
        "serverSeq": 7,
        "origin": {"clientId": "client-1", "clientSeq": 3},
    }


def initialize_result(state: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "protocolVersion": "1.0.0",
        "serverSeq": 7,
        "snapshots": [
            {
                "resource": ROOT,
                "state": {"agents": []} if state is None else state,
                "fromSeq": 7,
            }
        ],
        "serverInfo": {"name": "test-host", "version": "0.0.1"},
    }


def session_summary(status: Any = 40) -> dict[str, Any]:
    return {
        "resource": SESSION,
        "provider": "copilot",
        "title": "A session",
        "status": status,
        "createdAt": "2026-01-02T03:04:05.000Z",
        "modifiedAt": "2026-01-02T03:04:06.000Z",
    }


def session_state() -> dict[str, Any]:
    return {
        "provider": "copilot",
        "title": "A session",
        "status": 40,  # InProgress | IsRead
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [],
    }


# ─── The brief's cases ──────────────────────────────────────────────────────────────────────


def test_valid_root_config_changed_envelope_passes() -> None:
    check_action_envelope(root_config_envelope())


def test_envelope_missing_server_seq_fails() -> None:
    envelope = root_config_envelope()
    del envelope["serverSeq"]
    with pytest.raises(SchemaError, match="serverSeq"):
        check_action_envelope(envelope)


def test_action_of_unknown_type_fails() -> None:
    envelope = root_config_envelope()
    envelope["action"] = {"type": "root/nonExistentAction"}
    with pytest.raises(SchemaError, match="unknown action type"):
        check_action_envelope(envelope)


def test_initialize_result_with_root_snapshot_passes() -> None:
    check_result("initialize", initialize_result())


def test_initialize_result_whose_root_state_lacks_agents_fails() -> None:
    with pytest.raises(SchemaError, match="agents"):
        check_result("initialize", initialize_result(state={"activeSessions": 0}))


def test_unsupported_version_error_without_supported_versions_fails() -> None:
    with pytest.raises(SchemaError, match="supportedVersions"):
        check_error({"code": -32005, "message": "Unsupported protocol version"})
    with pytest.raises(SchemaError, match="supportedVersions"):
        check_error({"code": -32005, "message": "nope", "data": {"supportedVersions": [1]}})
    check_error({"code": -32005, "message": "nope", "data": {"supportedVersions": ["1.0.0"]}})


def test_ping_result_must_be_null() -> None:
    with pytest.raises(SchemaError, match="null"):
        check_result("ping", {})
    check_result("ping", None)


# ─── Actions and envelopes ──────────────────────────────────────────────────────────────────


def test_action_with_wrong_field_type_fails() -> None:
    envelope = root_config_envelope()
    envelope["action"]["config"] = "dark"
    with pytest.raises(SchemaError, match="RootConfigChanged"):
        check_action_envelope(envelope)


def test_action_missing_required_field_fails() -> None:
    with pytest.raises(SchemaError, match="turnId"):
        check_action({"type": "chat/delta", "partId": "p1", "content": "hi"})


def test_host_action_without_origin_passes() -> None:
    envelope = {"channel": SESSION, "action": {"type": "session/ready"}, "serverSeq": 1}
    check_action_envelope(envelope)


def test_envelope_with_malformed_origin_fails() -> None:
    envelope = root_config_envelope()
    envelope["origin"] = {"clientId": "client-1"}
    with pytest.raises(SchemaError, match="clientSeq"):
        check_action_envelope(envelope)


def test_rejected_echo_carries_the_client_action_verbatim() -> None:
    envelope = root_config_envelope()
    envelope["action"] = {"type": "chat/canvasesChanged", "canvases": "not a list"}
    envelope["rejectionReason"] = "not client-dispatchable"
    check_action_envelope(envelope)
    del envelope["origin"]
    with pytest.raises(SchemaError, match="origin"):
        check_action_envelope(envelope)
    envelope = root_config_envelope()
    envelope["rejectionReason"] = 42
    with pytest.raises(SchemaError, match="rejectionReason"):
        check_action_envelope(envelope)


def test_tool_call_confirmed_discriminates_on_approved() -> None:
    base = {"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "c1"}
    check_action({**base, "approved": True, "confirmed": "user-action"})
    check_action({**base, "approved": False, "reason": "denied"})
    with pytest.raises(SchemaError):
        check_action({**base, "approved": True, "reason": "denied"})  # approval needs confirmed
    with pytest.raises(SchemaError):
        check_action({**base, "approved": False, "confirmed": "user-action"})


def test_session_status_is_a_bit_set() -> None:
    envelope = {
        "channel": SESSION,
        "action": {"type": "session/chatUpdated", "chat": CHAT, "changes": {"status": 40}},
        "serverSeq": 3,
    }
    check_action_envelope(envelope)
    for bad in (-1, "40", 1.5):
        broken = copy.deepcopy(envelope)
        broken["action"]["changes"]["status"] = bad
        with pytest.raises(SchemaError):
            check_action_envelope(broken)


# ─── Results ────────────────────────────────────────────────────────────────────────────────


def test_null_result_methods() -> None:
    for method in ("createSession", "disposeSession", "createChat", "disposeChat"):
        check_result(method, None)
    for method in ("createTerminal", "disposeTerminal"):
        check_result(method, None)
        with pytest.raises(SchemaError):
            check_result(method, {})


def test_unknown_method_result_fails() -> None:
    with pytest.raises(SchemaError, match="unknown method"):
        check_result("frobnicate", {})


def test_list_sessions_result() -> None:
    check_result("listSessions", {"items": [session_summary()]})
    with pytest.raises(SchemaError, match="createdAt"):
        summary = session_summary()
        del summary["createdAt"]
        check_result("listSessions", {"items": [summary]})
    with pytest.raises(SchemaError):
        # SessionSummary timestamps are ISO strings in the 1.0.0 state schema.
        check_result("listSessions", {"items": [{**session_summary(), "createdAt": 1234}]})


def test_subscribe_result_snapshot_is_checked_by_scheme() -> None:
    check_result("subscribe", {})  # stateless channel
    snapshot = {"resource": SESSION, "state": session_state(), "fromSeq": 4}
    check_result("subscribe", {"snapshot": snapshot})
    broken = copy.deepcopy(snapshot)
    del broken["state"]["lifecycle"]
    with pytest.raises(SchemaError, match="lifecycle"):
        check_result("subscribe", {"snapshot": broken})
    # A root state under a session resource is not a session state.
    with pytest.raises(SchemaError):
        check_result("subscribe", {"snapshot": {**snapshot, "state": {"agents": []}}})
    with pytest.raises(SchemaError, match="no state channel"):
        check_result("subscribe", {"snapshot": {**snapshot, "resource": "file:///tmp"}})


def test_reconnect_results() -> None:
    replay = {"type": "replay", "actions": [root_config_envelope()], "missing": []}
    check_result("reconnect", replay)
    bad = root_config_envelope()
    bad["action"] = {"type": "root/configChanged"}  # no config
    with pytest.raises(SchemaError, match="config"):
        check_result("reconnect", {"type": "replay", "actions": [bad], "missing": []})
    snapshots = initialize_result()["snapshots"]
    check_result("reconnect", {"type": "snapshot", "snapshots": snapshots})
    snapshots[0]["state"] = {}
    with pytest.raises(SchemaError, match="agents"):
        check_result("reconnect", {"type": "snapshot", "snapshots": snapshots})


def test_per_channel_reconnect_results() -> None:
    snapshot = initialize_result()["snapshots"][0]
    channels = [
        {"kind": "replay", "channel": ROOT, "actions": [root_config_envelope()]},
        {"kind": "snapshot", "channel": ROOT, "snapshot": snapshot},
        {"kind": "missing", "channel": SESSION},
    ]
    check_result("reconnect", {"channels": channels})
    with pytest.raises(SchemaError, match="another channel's action"):
        check_result(
            "reconnect",
            {
                "channels": [
                    {"kind": "replay", "channel": SESSION, "actions": [root_config_envelope()]}
                ]
            },
        )
    with pytest.raises(SchemaError, match="a snapshot for another channel"):
        check_result(
            "reconnect",
            {"channels": [{"kind": "snapshot", "channel": SESSION, "snapshot": snapshot}]},
        )
    with pytest.raises(SchemaError, match="ReconnectResult.channels"):
        check_result("reconnect", {"channels": [{"kind": "replay", "channel": ROOT}]})


def test_state_definition_for() -> None:
    assert state_definition_for(ROOT) == "RootState"
    assert state_definition_for(SESSION) == "SessionState"
    assert state_definition_for(SESSION + "/annotations") == "AnnotationsState"
    assert state_definition_for(CHAT) == "ChatState"
    assert state_definition_for("ahp-terminal:/1") == "TerminalState"
    assert state_definition_for("ahp-changeset:/x") == "ChangesetState"
    assert state_definition_for("ahp-resource-watch:/w") == "ResourceWatchState"
    assert state_definition_for("ahp-canvas:/c") == "CanvasState"
    assert state_definition_for("ahp-automations://") == "AutomationState"
    assert state_definition_for("ahp-automation-run:/r") == "AutomationRunState"


# ─── Notifications and errors ───────────────────────────────────────────────────────────────


def test_notifications() -> None:
    check_notification("root/sessionAdded", {"channel": ROOT, "summary": session_summary()})
    check_notification("root/sessionRemoved", {"channel": ROOT, "session": SESSION})
    check_notification(
        "root/sessionSummaryChanged",
        {"channel": ROOT, "session": SESSION, "changes": {"status": 9, "title": "x"}},
    )
    with pytest.raises(SchemaError, match="session"):
        check_notification("root/sessionRemoved", {"channel": ROOT})
    with pytest.raises(SchemaError, match="1.1.0"):
        check_notification("channel/frame", {"channel": ROOT, "data": "{}"})
    with pytest.raises(SchemaError, match="unknown server notification"):
        check_notification("root/whatever", {"channel": ROOT})


def test_errors() -> None:
    check_error({"code": -32601, "message": "Method not found"})
    check_error({"code": -32602, "message": "bad", "data": {"anything": 1}})
    with pytest.raises(SchemaError, match="code"):
        check_error({"code": "x", "message": "bad"})
    with pytest.raises(SchemaError, match="message"):
        check_error({"code": -32600})
    with pytest.raises(SchemaError, match="resources"):
        check_error({"code": -32007, "message": "auth", "data": {}})
    check_error(
        {"code": -32007, "message": "auth", "data": {"resources": [{"resource": "https://x"}]}}
    )
    with pytest.raises(SchemaError, match="resource"):
        check_error({"code": -32007, "message": "auth", "data": {"resources": [{}]}})


# ─── Frames ─────────────────────────────────────────────────────────────────────────────────


def test_server_frames() -> None:
    check_server_frame({"jsonrpc": "2.0", "id": 1, "result": None}, "ping")
    check_server_frame({"jsonrpc": "2.0", "id": 2, "result": initialize_result()}, "initialize")
    check_server_frame(
        {"jsonrpc": "2.0", "method": "action", "params": root_config_envelope()}, None
    )
    check_server_frame(
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no"}}, "whatever"
    )
    check_server_frame(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}}, None
    )
    check_server_frame(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "resourceRead",
            "params": {"channel": ROOT, "uri": "virtual://plugin/file"},
        },
        None,
    )


@pytest.mark.parametrize(
    ("frame", "method", "match"),
    [
        ({"id": 1, "result": None}, "ping", "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "ping", "null"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, None, "method"),
        ({"jsonrpc": "2.0", "id": 1}, "ping", "exactly one"),
        ({"jsonrpc": "2.0", "id": 1, "result": None, "error": {}}, "ping", "exactly one"),
        ({"jsonrpc": "2.0", "id": None, "result": None}, "ping", "id"),
        ({"jsonrpc": "2.0", "params": {}}, None, "neither"),
        ({"jsonrpc": "2.0", "method": "action", "params": {"channel": ROOT}}, None, "action"),
        ({"jsonrpc": "2.0", "id": 4, "error": {"code": -32005, "message": "v"}}, None, "supp"),
        ({"jsonrpc": "2.0", "id": 4, "method": "listSessions", "params": {}}, None, "not a req"),
    ],
)
def test_bad_server_frames(frame: dict[str, Any], method: str | None, match: str) -> None:
    with pytest.raises(SchemaError, match=match):
        check_server_frame(frame, method)
