"""Behaviour of the reducers the shared cases do not cover (or cover thinly).

Derived from the canonical TypeScript reducers: annotations, resource watch,
automation catalogue and automation run, plus extra changeset, terminal,
chat and session transitions. The last section checks that ``reduce`` never
mutates what it is given and rejects unknown channel kinds.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hosts.protocol.reducers import REDUCERS, reduce

NOW_MS = 9999


def run(kind: str, state: Any, *actions: dict[str, Any]) -> Any:
    for action in actions:
        state = reduce(kind, state, action, now_ms=NOW_MS)
    return state


# ─── Annotations ─────────────────────────────────────────────────────────────


def annotation(annotation_id: str, *entries: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": annotation_id,
        "resource": "file:///workspace/src/app.ts",
        "entries": [{"id": entry, "text": f"text of {entry}"} for entry in entries],
        **extra,
    }


def annotations_state() -> dict[str, Any]:
    return {
        "annotations": [
            annotation("a-1", "a-1-e1", resolved=False),
            annotation("a-2", "a-2-e1", "a-2-e2"),
        ]
    }


def test_annotation_set_appends_an_annotation_with_a_new_id() -> None:
    added = annotation("a-3", "a-3-e1")
    state = run(
        "annotations", annotations_state(), {"type": "annotations/set", "annotation": added}
    )
    assert [a["id"] for a in state["annotations"]] == ["a-1", "a-2", "a-3"]
    assert state["annotations"][2] == added


def test_annotation_set_replaces_an_annotation_with_a_known_id_in_place() -> None:
    replacement = annotation("a-1", "a-1-e9", resolved=True)
    state = run(
        "annotations", annotations_state(), {"type": "annotations/set", "annotation": replacement}
    )
    assert [a["id"] for a in state["annotations"]] == ["a-1", "a-2"]
    assert state["annotations"][0] == replacement


def test_annotation_update_writes_only_the_fields_it_carries() -> None:
    new_range = {"start": {"line": 3, "character": 0}, "end": {"line": 4, "character": 2}}
    state = run(
        "annotations",
        annotations_state(),
        {
            "type": "annotations/updated",
            "annotationId": "a-1",
            "resolved": True,
            "range": new_range,
        },
    )
    updated = state["annotations"][0]
    assert updated["resolved"] is True
    assert updated["range"] == new_range
    assert updated["resource"] == "file:///workspace/src/app.ts"
    assert updated["entries"] == [{"id": "a-1-e1", "text": "text of a-1-e1"}]


def test_annotation_update_can_reopen_a_resolved_annotation() -> None:
    initial = {"annotations": [annotation("a-1", "e", resolved=True)]}
    state = run(
        "annotations",
        initial,
        {"type": "annotations/updated", "annotationId": "a-1", "resolved": False},
    )
    assert state["annotations"][0]["resolved"] is False


def test_annotation_update_for_unknown_id_changes_nothing() -> None:
    initial = annotations_state()
    state = run(
        "annotations",
        initial,
        {"type": "annotations/updated", "annotationId": "missing", "resolved": True},
    )
    assert state is initial


def test_annotation_removed_drops_the_whole_annotation() -> None:
    state = run(
        "annotations", annotations_state(), {"type": "annotations/removed", "annotationId": "a-2"}
    )
    assert [a["id"] for a in state["annotations"]] == ["a-1"]


def test_annotation_removed_for_unknown_id_changes_nothing() -> None:
    initial = annotations_state()
    state = run("annotations", initial, {"type": "annotations/removed", "annotationId": "nope"})
    assert state is initial


def test_entry_set_appends_a_new_entry_and_replaces_a_known_one() -> None:
    state = run(
        "annotations",
        annotations_state(),
        {
            "type": "annotations/entrySet",
            "annotationId": "a-2",
            "entry": {"id": "a-2-e3", "text": {"markdown": "**third**"}},
        },
        {
            "type": "annotations/entrySet",
            "annotationId": "a-2",
            "entry": {"id": "a-2-e1", "text": "edited", "_meta": {"author": "agent"}},
        },
    )
    entries = state["annotations"][1]["entries"]
    assert [entry["id"] for entry in entries] == ["a-2-e1", "a-2-e2", "a-2-e3"]
    assert entries[0] == {"id": "a-2-e1", "text": "edited", "_meta": {"author": "agent"}}
    assert entries[2]["text"] == {"markdown": "**third**"}


def test_entry_set_for_unknown_annotation_changes_nothing() -> None:
    initial = annotations_state()
    state = run(
        "annotations",
        initial,
        {"type": "annotations/entrySet", "annotationId": "nope", "entry": {"id": "e", "text": "x"}},
    )
    assert state is initial


def test_entry_removed_drops_only_that_entry() -> None:
    state = run(
        "annotations",
        annotations_state(),
        {"type": "annotations/entryRemoved", "annotationId": "a-2", "entryId": "a-2-e1"},
    )
    assert [entry["id"] for entry in state["annotations"][1]["entries"]] == ["a-2-e2"]
    assert state["annotations"][0]["entries"] == [{"id": "a-1-e1", "text": "text of a-1-e1"}]


def test_entry_removed_for_unknown_entry_or_annotation_changes_nothing() -> None:
    initial = annotations_state()
    assert (
        run(
            "annotations",
            initial,
            {"type": "annotations/entryRemoved", "annotationId": "a-2", "entryId": "nope"},
        )
        is initial
    )
    assert (
        run(
            "annotations",
            initial,
            {"type": "annotations/entryRemoved", "annotationId": "nope", "entryId": "a-2-e1"},
        )
        is initial
    )


def test_annotations_unknown_action_type_changes_nothing() -> None:
    initial = annotations_state()
    assert run("annotations", initial, {"type": "annotations/futureThing"}) is initial


# ─── Resource watch ──────────────────────────────────────────────────────────


def test_resource_watch_changed_keeps_the_watch_descriptor_as_it_is() -> None:
    initial = {"root": "file:///workspace", "recursive": True, "excludes": {"items": ["**/.git"]}}
    action = {
        "type": "resourceWatch/changed",
        "changes": {"items": [{"uri": "file:///workspace/a.ts", "type": "updated"}]},
    }
    assert run("resourceWatch", initial, action) is initial


def test_resource_watch_unknown_action_type_changes_nothing() -> None:
    initial = {"root": "file:///workspace", "recursive": False}
    assert run("resourceWatch", initial, {"type": "resourceWatch/other"}) is initial


# ─── Automation catalogue ────────────────────────────────────────────────────


def automation_entry(number: int, title: str = "Nightly triage") -> dict[str, Any]:
    return {
        "resource": f"ahp-automation:/auto-{number}",
        "definition": {
            "title": title,
            "message": {"text": "Triage new issues", "origin": {"kind": "automation"}},
            "session": {"provider": "copilot"},
            "enabled": True,
            "triggers": [
                {
                    "id": "t1",
                    "kind": "schedule",
                    "schedule": {"expression": "0 2 * * *", "timeZone": "UTC"},
                }
            ],
        },
        "runs": [],
        "operations": ["update", "remove", "run"],
        "createdAt": "2026-09-01T00:00:00.000Z",
        "modifiedAt": "2026-09-01T00:00:00.000Z",
    }


def test_automation_set_appends_an_entry_with_a_new_resource() -> None:
    state = run(
        "automation",
        {"entries": [automation_entry(1)]},
        {"type": "automation/set", "automation": automation_entry(2)},
    )
    assert [e["resource"] for e in state["entries"]] == [
        "ahp-automation:/auto-1",
        "ahp-automation:/auto-2",
    ]


def test_automation_set_replaces_the_entry_with_the_same_resource_in_place() -> None:
    renamed = automation_entry(1, title="Morning triage")
    state = run(
        "automation",
        {"entries": [automation_entry(1), automation_entry(2)]},
        {"type": "automation/set", "automation": renamed},
    )
    assert state["entries"][0] == renamed
    assert len(state["entries"]) == 2


def test_automation_removed_drops_the_entry() -> None:
    state = run(
        "automation",
        {"entries": [automation_entry(1), automation_entry(2)]},
        {"type": "automation/removed", "resource": "ahp-automation:/auto-1"},
    )
    assert [e["resource"] for e in state["entries"]] == ["ahp-automation:/auto-2"]


def test_automation_removed_for_unknown_resource_changes_nothing() -> None:
    initial = {"entries": [automation_entry(1)]}
    action = {"type": "automation/removed", "resource": "ahp-automation:/missing"}
    assert run("automation", initial, action) is initial


def test_automation_create_and_update_requests_leave_the_catalogue_unchanged() -> None:
    initial = {"entries": [automation_entry(1)]}
    create = {
        "type": "automation/createRequested",
        "resource": "ahp-automation:/auto-9",
        "definition": automation_entry(9)["definition"],
    }
    update = {
        "type": "automation/updateRequested",
        "resource": "ahp-automation:/auto-1",
        "changes": {"enabled": False},
    }
    assert run("automation", initial, create) is initial
    assert run("automation", initial, update) is initial


def test_automation_set_still_works_on_a_pre_1_0_automations_list() -> None:
    state = run(
        "automation",
        {"automations": []},
        {"type": "automation/set", "automation": automation_entry(1)},
    )
    assert state == {"automations": [automation_entry(1)]}


# ─── Automation run ──────────────────────────────────────────────────────────


def run_state(**extra: Any) -> dict[str, Any]:
    return {
        "resource": "ahp-automation-run:/run-1",
        "automation": "ahp-automation:/auto-1",
        "origin": {"kind": "manual"},
        "lifecycle": {"status": "pending", "createdAt": "2026-09-01T02:00:00.000Z"},
        "sessions": ["ahp-session:/s1"],
        **extra,
    }


def test_run_lifecycle_changed_replaces_the_lifecycle() -> None:
    lifecycle = {
        "status": "running",
        "createdAt": "2026-09-01T02:00:00.000Z",
        "startedAt": "2026-09-01T02:00:05.000Z",
    }
    state = run(
        "automationRun",
        run_state(),
        {"type": "automationRun/lifecycleChanged", "lifecycle": lifecycle},
    )
    assert state["lifecycle"] == lifecycle
    assert state["sessions"] == ["ahp-session:/s1"]


def test_run_session_set_appends_a_session_only_once() -> None:
    action = {"type": "automationRun/sessionSet", "session": "ahp-session:/s2"}
    state = run("automationRun", run_state(), action)
    assert state["sessions"] == ["ahp-session:/s1", "ahp-session:/s2"]
    assert run("automationRun", state, action) is state


def test_run_session_removed_also_clears_the_primary_session_it_was() -> None:
    initial = run_state(
        sessions=["ahp-session:/s1", "ahp-session:/s2"], primarySession="ahp-session:/s2"
    )
    state = run(
        "automationRun",
        initial,
        {"type": "automationRun/sessionRemoved", "session": "ahp-session:/s2"},
    )
    assert state["sessions"] == ["ahp-session:/s1"]
    assert "primarySession" not in state


def test_run_session_removed_keeps_a_different_primary_session() -> None:
    initial = run_state(
        sessions=["ahp-session:/s1", "ahp-session:/s2"], primarySession="ahp-session:/s1"
    )
    state = run(
        "automationRun",
        initial,
        {"type": "automationRun/sessionRemoved", "session": "ahp-session:/s2"},
    )
    assert state["primarySession"] == "ahp-session:/s1"


def test_run_session_removed_for_unknown_session_changes_nothing() -> None:
    initial = run_state()
    action = {"type": "automationRun/sessionRemoved", "session": "ahp-session:/nope"}
    assert run("automationRun", initial, action) is initial


def test_run_primary_session_changed_sets_and_clears_the_primary_session() -> None:
    state = run(
        "automationRun",
        run_state(),
        {"type": "automationRun/primarySessionChanged", "primarySession": "ahp-session:/s1"},
    )
    assert state["primarySession"] == "ahp-session:/s1"
    cleared = run("automationRun", state, {"type": "automationRun/primarySessionChanged"})
    assert "primarySession" not in cleared


def test_run_cancel_requested_leaves_the_run_unchanged() -> None:
    initial = run_state()
    assert run("automationRun", initial, {"type": "automationRun/cancelRequested"}) is initial


# ─── Changeset (beyond the shared cases) ─────────────────────────────────────


def changeset_file(file_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": file_id, "edit": {"after": {"uri": file_id, "content": {"uri": "c:/x"}}}, **extra}


def changeset_state(**extra: Any) -> dict[str, Any]:
    return {
        "status": "ready",
        "files": [changeset_file("file:///a"), changeset_file("file:///b", reviewed=True)],
        **extra,
    }


def operation(op_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": op_id, "label": op_id.title(), "scopes": ["changeset"], "status": "idle", **extra}


def test_files_review_changed_marks_only_the_listed_files() -> None:
    state = run(
        "changeset",
        changeset_state(),
        {
            "type": "changeset/filesReviewChanged",
            "files": ["file:///a", "file:///zzz"],
            "reviewed": True,
        },
    )
    assert [f.get("reviewed") for f in state["files"]] == [True, True]


def test_files_review_changed_that_changes_no_file_returns_the_same_state() -> None:
    initial = changeset_state()
    action = {"type": "changeset/filesReviewChanged", "files": ["file:///b"], "reviewed": True}
    assert run("changeset", initial, action) is initial


def test_content_changed_replaces_files_and_keeps_operations_it_does_not_carry() -> None:
    initial = changeset_state(operations=[operation("commit")])
    state = run(
        "changeset",
        initial,
        {"type": "changeset/contentChanged", "files": [changeset_file("file:///c")]},
    )
    assert [f["id"] for f in state["files"]] == ["file:///c"]
    assert state["operations"] == [operation("commit")]


def test_content_changed_replaces_operations_when_it_carries_them() -> None:
    state = run(
        "changeset",
        changeset_state(operations=[operation("commit")]),
        {"type": "changeset/contentChanged", "files": [], "operations": [operation("discard")]},
    )
    assert state["files"] == []
    assert state["operations"] == [operation("discard")]


def test_operations_changed_without_operations_clears_them() -> None:
    state = run(
        "changeset",
        changeset_state(operations=[operation("commit")]),
        {"type": "changeset/operationsChanged"},
    )
    assert "operations" not in state


def test_operation_status_changed_carries_an_error_only_with_the_error_status() -> None:
    failure = {"errorType": "git", "message": "push rejected"}
    failed = run(
        "changeset",
        changeset_state(operations=[operation("push"), operation("commit")]),
        {
            "type": "changeset/operationStatusChanged",
            "operationId": "push",
            "status": "error",
            "error": failure,
        },
    )
    assert failed["operations"][0] == operation("push", status="error", error=failure)
    recovered = run(
        "changeset",
        failed,
        {
            "type": "changeset/operationStatusChanged",
            "operationId": "push",
            "status": "running",
            "error": failure,
        },
    )
    assert recovered["operations"][0] == operation("push", status="running")
    assert recovered["operations"][1] == operation("commit")


def test_operation_status_changed_for_unknown_operation_changes_nothing() -> None:
    initial = changeset_state(operations=[operation("commit")])
    action = {
        "type": "changeset/operationStatusChanged",
        "operationId": "nope",
        "status": "running",
    }
    assert run("changeset", initial, action) is initial
    no_ops = changeset_state()
    assert run("changeset", no_ops, action) is no_ops


def test_changeset_cleared_empties_the_files_and_is_a_no_op_when_already_empty() -> None:
    state = run("changeset", changeset_state(), {"type": "changeset/cleared"})
    assert state["files"] == []
    assert run("changeset", state, {"type": "changeset/cleared"}) is state


# ─── Terminal (beyond the shared cases) ──────────────────────────────────────


def terminal_state(**extra: Any) -> dict[str, Any]:
    return {
        "title": "bash",
        "content": [{"type": "unclassified", "value": "$ "}],
        "claim": {"kind": "client", "clientId": "c1"},
        "lifecycle": {"status": "running"},
        **extra,
    }


def test_command_executed_starts_a_command_part_and_flags_command_detection() -> None:
    state = run(
        "terminal",
        terminal_state(),
        {
            "type": "terminal/commandExecuted",
            "commandId": "cmd-1",
            "commandLine": "ls",
            "timestamp": 1000,
        },
    )
    assert state["content"][-1] == {
        "type": "command",
        "commandId": "cmd-1",
        "commandLine": "ls",
        "output": "",
        "timestamp": 1000,
        "isComplete": False,
    }
    assert state["supportsCommandDetection"] is True


def test_output_goes_to_the_running_command_and_after_it_finishes_to_new_text() -> None:
    state = run(
        "terminal",
        terminal_state(),
        {
            "type": "terminal/commandExecuted",
            "commandId": "cmd-1",
            "commandLine": "ls",
            "timestamp": 1000,
        },
        {"type": "terminal/data", "data": "a.txt\r\n"},
        {"type": "terminal/data", "data": "b.txt\r\n"},
        {"type": "terminal/commandFinished", "commandId": "cmd-1", "exitCode": 0, "durationMs": 12},
        {"type": "terminal/data", "data": "$ "},
    )
    command = state["content"][1]
    assert command["output"] == "a.txt\r\nb.txt\r\n"
    assert command["isComplete"] is True
    assert command["exitCode"] == 0
    assert command["durationMs"] == 12
    assert state["content"][2] == {"type": "unclassified", "value": "$ "}


def test_command_finished_for_unknown_command_changes_nothing() -> None:
    initial = terminal_state()
    action = {"type": "terminal/commandFinished", "commandId": "nope", "exitCode": 1}
    assert run("terminal", initial, action) is initial


def test_command_detection_available_sets_the_flag() -> None:
    state = run("terminal", terminal_state(), {"type": "terminal/commandDetectionAvailable"})
    assert state["supportsCommandDetection"] is True


def test_terminal_title_changed_sets_the_title() -> None:
    state = run("terminal", terminal_state(), {"type": "terminal/titleChanged", "title": "zsh"})
    assert state["title"] == "zsh"


def test_terminal_exited_without_exit_code_records_only_the_exit() -> None:
    state = run("terminal", terminal_state(), {"type": "terminal/exited"})
    assert state["lifecycle"] == {"status": "exited"}


def test_terminal_input_is_a_side_effect_that_changes_no_state() -> None:
    initial = terminal_state()
    assert run("terminal", initial, {"type": "terminal/input", "data": "ls\r"}) is initial


# ─── Chat (behaviours chosen deliberately) ───────────────────────────────────


def chat_with_active_turn(**extra: Any) -> dict[str, Any]:
    return {
        "resource": "ahp-chat:/c1",
        "title": "Chat",
        "status": 8 | 32,
        "modifiedAt": "2026-09-01T10:00:00.000Z",
        "turns": [],
        "activeTurn": {
            "id": "turn-1",
            "startedAt": "2026-09-01T10:00:00.000Z",
            "message": {"text": "Hello", "origin": {"kind": "user"}},
            "responseParts": [],
        },
        **extra,
    }


def test_chat_error_appends_its_error_part_and_sets_the_error_status() -> None:
    part = {
        "kind": "error",
        "error": {"errorType": "quota", "message": "Out of tokens"},
        "resumable": True,
    }
    state = run(
        "chat",
        chat_with_active_turn(),
        {"type": "chat/error", "turnId": "turn-1", "duration": 1500, "part": part},
    )
    assert "activeTurn" not in state
    assert state["turns"][0]["state"] == "error"
    assert state["turns"][0]["responseParts"] == [part]
    assert state["status"] == 2 | 32  # Error, IsRead kept
    assert state["modifiedAt"] == "2026-09-01T10:00:01.500Z"


def test_chat_response_part_of_kind_error_is_ignored() -> None:
    initial = chat_with_active_turn()
    action = {
        "type": "chat/responsePart",
        "turnId": "turn-1",
        "part": {"kind": "error", "error": {"errorType": "x", "message": "y"}},
    }
    assert run("chat", initial, action) is initial


def test_chat_turn_started_twice_restarts_the_active_turn() -> None:
    # 1.0 has no idempotency guard: the host must not echo a duplicate start.
    started = {
        "type": "chat/turnStarted",
        "turnId": "turn-1",
        "startedAt": "2026-09-01T11:00:00.000Z",
        "message": {"text": "Again", "origin": {"kind": "user"}},
    }
    state = run("chat", chat_with_active_turn(), started)
    assert state["activeTurn"]["message"]["text"] == "Again"
    assert state["activeTurn"]["responseParts"] == []
    assert state["modifiedAt"] == "2026-09-01T11:00:00.000Z"
    assert state["status"] == 8  # InProgress, IsRead cleared


def test_chat_turn_end_with_unparseable_start_falls_back_to_the_host_clock() -> None:
    initial = chat_with_active_turn()
    initial["activeTurn"]["startedAt"] = "not a timestamp"
    state = run("chat", initial, {"type": "chat/turnComplete", "turnId": "turn-1", "duration": 5})
    assert state["modifiedAt"] == "1970-01-01T00:00:09.999Z"


def test_chat_turn_end_without_duration_leaves_it_out_and_uses_the_host_clock() -> None:
    state = run("chat", chat_with_active_turn(), {"type": "chat/turnCancelled", "turnId": "turn-1"})
    assert "duration" not in state["turns"][0]
    assert state["turns"][0]["state"] == "cancelled"
    assert state["modifiedAt"] == "1970-01-01T00:00:09.999Z"


def test_chat_queued_turn_start_consumes_the_queued_message() -> None:
    queued = {"id": "q1", "message": {"text": "Next", "origin": {"kind": "user"}}}
    initial = {
        "resource": "ahp-chat:/c1",
        "title": "Chat",
        "status": 1,
        "turns": [],
        "queuedMessages": [queued],
    }
    state = run(
        "chat",
        initial,
        {
            "type": "chat/turnStarted",
            "turnId": "turn-2",
            "startedAt": "2026-09-01T12:00:00.000Z",
            "message": queued["message"],
            "queuedMessageId": "q1",
        },
    )
    assert "queuedMessages" not in state
    assert state["activeTurn"]["id"] == "turn-2"


def test_chat_ready_from_a_client_owned_call_keeps_its_client_owner() -> None:
    initial = chat_with_active_turn()
    state = run(
        "chat",
        initial,
        {
            "type": "chat/toolCallStart",
            "turnId": "turn-1",
            "toolCallId": "tc-1",
            "toolName": "run",
            "displayName": "Run",
            "contributor": {"kind": "client", "clientId": "c1"},
        },
        {
            "type": "chat/toolCallReady",
            "turnId": "turn-1",
            "toolCallId": "tc-1",
            "invocationMessage": "Run it",
            "confirmed": "not-needed",
            "contributor": {"kind": "mcp", "customizationId": "m1"},
        },
    )
    tool_call = state["activeTurn"]["responseParts"][0]["toolCall"]
    assert tool_call["status"] == "running"
    assert tool_call["contributor"] == {"kind": "client", "clientId": "c1"}


# ─── Session (beyond the shared cases) ───────────────────────────────────────


def test_mcp_server_background_requested_unblocks_a_starting_server() -> None:
    server = {
        "type": "mcpServer",
        "id": "m1",
        "uri": "file:///mcp.json",
        "name": "M",
        "state": {"kind": "starting", "blocking": True},
    }
    initial = {
        "provider": "copilot",
        "title": "S",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [],
        "customizations": [server],
    }
    state = run("session", initial, {"type": "session/mcpServerBackgroundRequested", "id": "m1"})
    assert state["customizations"][0]["state"] == {"kind": "starting", "blocking": False}
    ready = {**initial, "customizations": [{**server, "state": {"kind": "ready"}}]}
    assert (
        run("session", ready, {"type": "session/mcpServerBackgroundRequested", "id": "m1"}) is ready
    )


def test_working_directory_replaced_by_an_earlier_entry_drops_the_replaced_one() -> None:
    initial = {
        "title": "S",
        "status": 1,
        "workingDirectories": ["file:///a", "file:///b", "file:///c"],
    }
    state = run(
        "session",
        initial,
        {
            "type": "session/workingDirectoryReplaced",
            "directory": "file:///c",
            "replacement": "file:///a",
        },
    )
    assert state["workingDirectories"] == ["file:///a", "file:///b"]


def test_working_directory_replaced_by_a_later_entry_moves_it_into_the_slot() -> None:
    initial = {
        "title": "S",
        "status": 1,
        "workingDirectories": ["file:///a", "file:///b", "file:///c"],
    }
    state = run(
        "session",
        initial,
        {
            "type": "session/workingDirectoryReplaced",
            "directory": "file:///a",
            "replacement": "file:///c",
        },
    )
    assert state["workingDirectories"] == ["file:///c", "file:///b"]


# ─── Purity and dispatch ─────────────────────────────────────────────────────

_TOOL_CALL_TURN = {
    "resource": "ahp-chat:/c1",
    "title": "Chat",
    "status": 24,
    "modifiedAt": "2026-09-01T10:00:00.000Z",
    "turns": [],
    "queuedMessages": [
        {"id": "q1", "message": {"text": "one", "origin": {"kind": "user"}}},
        {"id": "q2", "message": {"text": "two", "origin": {"kind": "user"}}},
    ],
    "activeTurn": {
        "id": "turn-1",
        "startedAt": "2026-09-01T10:00:00.000Z",
        "message": {"text": "Hello", "origin": {"kind": "user"}},
        "responseParts": [
            {"kind": "markdown", "id": "md-1", "content": "Hi"},
            {
                "kind": "toolCall",
                "toolCall": {
                    "status": "pending-confirmation",
                    "toolCallId": "tc-1",
                    "toolName": "bash",
                    "displayName": "Bash",
                    "invocationMessage": "Run ls",
                    "toolInput": "ls",
                    "options": [{"id": "allow", "label": "Allow", "kind": "approve"}],
                },
            },
            {
                "kind": "inputRequest",
                "request": {"id": "in-1", "answers": {"q": {"state": "skipped"}}},
            },
        ],
    },
}

_SESSION = {
    "provider": "copilot",
    "title": "S",
    "status": 1,
    "lifecycle": "ready",
    "activeClients": [{"clientId": "c1", "tools": []}],
    "chats": [
        {"resource": "ahp-chat:/c1", "title": "One", "status": 1, "modifiedAt": "x"},
        {"resource": "ahp-chat:/c2", "title": "Two", "status": 1, "modifiedAt": "x"},
    ],
    "workingDirectories": ["file:///a", "file:///b"],
    "inputNeeded": [
        {"id": "r1", "chat": "ahp-chat:/c1", "kind": "chatInput", "request": {"id": "r1"}}
    ],
    "config": {"schema": {"type": "object", "properties": {}}, "values": {"mode": "fast"}},
    "customizations": [
        {
            "type": "plugin",
            "id": "p1",
            "uri": "u",
            "name": "P",
            "children": [
                {"type": "skill", "id": "s1", "uri": "u#s", "name": "s"},
                {
                    "type": "mcpServer",
                    "id": "m1",
                    "uri": "u#m",
                    "name": "m",
                    "state": {"kind": "ready"},
                },
            ],
        }
    ],
}

_PURITY_SAMPLES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "root",
        {"agents": [], "config": {"schema": {}, "values": {"a": 1}}},
        {"type": "root/configChanged", "config": {"b": 2}},
    ),
    ("root", {"agents": [{"provider": "x"}]}, {"type": "root/agentsChanged", "agents": []}),
    (
        "session",
        _SESSION,
        {"type": "session/chatUpdated", "chat": "ahp-chat:/c1", "changes": {"title": "New"}},
    ),
    (
        "session",
        _SESSION,
        {"type": "session/chatsReordered", "chats": ["ahp-chat:/c2", "ahp-chat:/c1"]},
    ),
    ("session", _SESSION, {"type": "session/inputNeededRemoved", "id": "r1"}),
    (
        "session",
        _SESSION,
        {
            "type": "session/customizationToggled",
            "id": "s1",
            "enablement": [{"kind": "session", "enabled": False}],
        },
    ),
    ("session", _SESSION, {"type": "session/mcpServerStopRequested", "id": "m1"}),
    ("session", _SESSION, {"type": "session/customizationRemoved", "id": "s1"}),
    (
        "session",
        _SESSION,
        {
            "type": "session/workingDirectoryReplaced",
            "directory": "file:///b",
            "replacement": "file:///c",
        },
    ),
    ("session", _SESSION, {"type": "session/configChanged", "config": {"mode": "slow"}}),
    ("session", _SESSION, {"type": "session/isReadChanged", "isRead": True}),
    (
        "chat",
        _TOOL_CALL_TURN,
        {"type": "chat/delta", "turnId": "turn-1", "partId": "md-1", "content": "!"},
    ),
    (
        "chat",
        _TOOL_CALL_TURN,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": "turn-1",
            "toolCallId": "tc-1",
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": "allow",
            "editedToolInput": "ls -la",
        },
    ),
    (
        "chat",
        _TOOL_CALL_TURN,
        {"type": "chat/inputAnswerChanged", "requestId": "in-1", "questionId": "q"},
    ),
    (
        "chat",
        _TOOL_CALL_TURN,
        {
            "type": "chat/inputCompleted",
            "requestId": "in-1",
            "response": "accept",
            "answers": {"z": {"state": "skipped"}},
        },
    ),
    ("chat", _TOOL_CALL_TURN, {"type": "chat/turnComplete", "turnId": "turn-1", "duration": 10}),
    ("chat", _TOOL_CALL_TURN, {"type": "chat/queuedMessagesReordered", "order": ["q2"]}),
    ("chat", _TOOL_CALL_TURN, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1"}),
    ("chat", _TOOL_CALL_TURN, {"type": "chat/truncated"}),
    (
        "chat",
        _TOOL_CALL_TURN,
        {
            "type": "chat/turnStarted",
            "turnId": "t2",
            "startedAt": "2026-09-01T11:00:00Z",
            "message": {"text": "x"},
            "queuedMessageId": "q1",
        },
    ),
    ("terminal", terminal_state(), {"type": "terminal/data", "data": "more"}),
    ("terminal", terminal_state(), {"type": "terminal/exited", "exitCode": 3}),
    (
        "changeset",
        changeset_state(
            operations=[operation("push", status="error", error={"errorType": "e", "message": "m"})]
        ),
        {"type": "changeset/operationStatusChanged", "operationId": "push", "status": "idle"},
    ),
    (
        "changeset",
        changeset_state(),
        {"type": "changeset/filesReviewChanged", "files": ["file:///a"], "reviewed": True},
    ),
    (
        "annotations",
        annotations_state(),
        {"type": "annotations/entrySet", "annotationId": "a-1", "entry": {"id": "n", "text": "t"}},
    ),
    (
        "annotations",
        annotations_state(),
        {"type": "annotations/updated", "annotationId": "a-2", "resolved": True},
    ),
    (
        "resourceWatch",
        {"root": "file:///w", "recursive": True},
        {"type": "resourceWatch/changed", "changes": {"items": []}},
    ),
    (
        "automation",
        {"entries": [automation_entry(1)]},
        {"type": "automation/set", "automation": automation_entry(1, title="T")},
    ),
    (
        "automationRun",
        run_state(primarySession="ahp-session:/s1"),
        {"type": "automationRun/sessionRemoved", "session": "ahp-session:/s1"},
    ),
]


@pytest.mark.parametrize(
    ("kind", "state", "action"),
    _PURITY_SAMPLES,
    ids=[f"{kind}-{action['type']}" for kind, _, action in _PURITY_SAMPLES],
)
def test_reduce_never_mutates_its_state_or_action(
    kind: str, state: dict[str, Any], action: dict[str, Any]
) -> None:
    state_before = copy.deepcopy(state)
    action_before = copy.deepcopy(action)
    result = reduce(kind, state, action, now_ms=NOW_MS)
    assert state == state_before
    assert action == action_before
    if kind == "resourceWatch":
        # A watch retains no change history: its state comes back as is.
        assert result is state
    else:
        # Every other sample changes something, so a new state object comes back.
        assert result is not state
        assert result != state


@pytest.mark.parametrize("kind", sorted(REDUCERS))
def test_every_kind_returns_the_same_state_for_an_unknown_action_type(kind: str) -> None:
    state: dict[str, Any] = {"anything": [1, 2, 3]}
    assert reduce(kind, state, {"type": "future/somethingNew"}, now_ms=NOW_MS) is state


def test_the_reducer_table_covers_every_channel_kind() -> None:
    assert set(REDUCERS) == {
        "root",
        "session",
        "chat",
        "terminal",
        "changeset",
        "annotations",
        "resourceWatch",
        "automation",
        "automationRun",
    }


def test_an_unknown_reducer_kind_raises_value_error() -> None:
    with pytest.raises(ValueError, match="canvas"):
        reduce("canvas", {}, {"type": "canvas/stateChanged"}, now_ms=NOW_MS)
