"""Reducer for ``ChangesetState`` (``ahp-changeset:`` channels).

Port of ``types/channels-changeset/reducer.ts``. File order is stable: an
unknown file id is appended, a known one is replaced in place.
"""

from __future__ import annotations

from typing import Any

from ._common import (
    Action,
    JsonObject,
    as_list,
    assign,
    find_index,
    key_equals,
    remove_at,
    replace_at,
    upsert,
    without,
)


def _status_changed(state: JsonObject, action: Action) -> JsonObject:
    # The error travels only with the error status, so a changeset that
    # recovers does not keep a stale error.
    if action.get("status") == "error":
        return assign(state, {"status": action.get("status"), "error": action.get("error")})
    return assign(without(state, "error"), {"status": action.get("status")})


def _files_review_changed(state: JsonObject, action: Action) -> JsonObject:
    ids = set(as_list(action.get("files")))
    reviewed = action.get("reviewed")
    changed = False
    files: list[Any] = []
    for file in as_list(state.get("files")):
        if isinstance(file, dict) and file.get("id") in ids and file.get("reviewed") != reviewed:
            file = {**file, "reviewed": reviewed}
            changed = True
        files.append(file)
    return {**state, "files": files} if changed else state


def _operation_status_changed(state: JsonObject, action: Action) -> JsonObject:
    operations = state.get("operations")
    if not isinstance(operations, list):
        return state
    index = find_index(operations, key_equals("id", action.get("operationId")))
    if index < 0:
        return state
    current = operations[index]
    # As for the changeset itself: keep an error only while the status is error.
    if action.get("status") == "error":
        updated = assign(current, {"status": action.get("status"), "error": action.get("error")})
    else:
        updated = assign(without(current, "error"), {"status": action.get("status")})
    return {**state, "operations": replace_at(operations, index, updated)}


def reduce_changeset(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one changeset action to ``state`` and return the resulting state.

    ``now_ms`` is accepted for a uniform signature and unused. Unknown action
    types leave the state unchanged.
    """
    kind: Any = action.get("type")
    files = as_list(state.get("files"))
    if kind == "changeset/statusChanged":
        return _status_changed(state, action)
    if kind == "changeset/fileSet":
        file = action.get("file")
        if not isinstance(file, dict):
            return state
        return {**state, "files": upsert(files, file, "id")}
    if kind == "changeset/fileRemoved":
        index = find_index(files, key_equals("id", action.get("fileId")))
        if index < 0:
            return state
        return {**state, "files": remove_at(files, index)}
    if kind == "changeset/filesReviewChanged":
        return _files_review_changed(state, action)
    if kind == "changeset/contentChanged":
        # A full refresh: files always replaced, operations only when sent.
        changes: JsonObject = {"files": as_list(action.get("files"))}
        if action.get("operations") is not None:
            changes["operations"] = action.get("operations")
        return {**state, **changes}
    if kind == "changeset/operationsChanged":
        return assign(state, {"operations": action.get("operations")})
    if kind == "changeset/operationStatusChanged":
        return _operation_status_changed(state, action)
    if kind == "changeset/cleared":
        if not files:
            return state
        return {**state, "files": []}
    return state
