"""Reducer for ``ChangesetState`` (``ahp-changeset:`` channels).

Port of ``types/channels-changeset/reducer.ts``. File order is stable: an
unknown file id is appended, a known one is replaced in place.
"""

from __future__ import annotations

from typing import Any

from ._action_table import ActionTable, removes_item, sets_field, sets_item, table_reducer
from ._common import Action, JsonObject, as_list, assign, with_item_changed, without


def _with_status(obj: JsonObject, action: Action) -> JsonObject:
    """``obj`` with the action's status, and its error only when that status is error.

    The error travels only with the error status, so a changeset or operation
    that recovers does not keep a stale error.
    """
    if action.get("status") == "error":
        return assign(obj, {"status": action.get("status"), "error": action.get("error")})
    return assign(without(obj, "error"), {"status": action.get("status")})


def _status_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return _with_status(state, action)


def _files_review_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
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


def _content_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    # A full refresh: files always replaced, operations only when sent.
    changes: JsonObject = {"files": as_list(action.get("files"))}
    if action.get("operations") is not None:
        changes["operations"] = action.get("operations")
    return {**state, **changes}


def _operation_status_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return with_item_changed(
        state,
        "operations",
        "id",
        action.get("operationId"),
        lambda operation: _with_status(operation, action),
    )


def _cleared(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return {**state, "files": []} if as_list(state.get("files")) else state


CHANGESET_ACTIONS: ActionTable = {
    "changeset/statusChanged": _status_changed,
    "changeset/fileSet": sets_item("files", source="file", key="id"),
    "changeset/fileRemoved": removes_item("files", key="id", source="fileId"),
    "changeset/filesReviewChanged": _files_review_changed,
    "changeset/contentChanged": _content_changed,
    "changeset/operationsChanged": sets_field("operations"),
    "changeset/operationStatusChanged": _operation_status_changed,
    "changeset/cleared": _cleared,
}


reduce_changeset = table_reducer(CHANGESET_ACTIONS)
