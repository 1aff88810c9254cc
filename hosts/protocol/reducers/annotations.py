"""Reducer for ``AnnotationsState`` (``ahp-session:/<id>/annotations`` channels).

Port of ``types/channels-annotations/reducer.ts``. Annotations and their
entries keep dispatch order: new ids are appended, known ids replaced in
place, and an action naming an unknown id changes nothing. Keeping at least
one entry per annotation is the producer's job, not the reducer's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._action_table import ActionTable, removes_item, sets_item, table_reducer
from ._common import (
    Action,
    JsonObject,
    pick,
    with_item_changed,
    with_item_removed,
    with_item_set,
)

#: Fields ``annotations/updated`` may overwrite; absent ones are left alone.
_UPDATABLE_FIELDS = ("origin", "resource", "range", "resolved")


def _with_annotation_changed(
    state: JsonObject, action: Action, change: Callable[[JsonObject], JsonObject]
) -> JsonObject:
    """The annotation ``action["annotationId"]`` replaced by ``change(annotation)``."""
    return with_item_changed(state, "annotations", "id", action.get("annotationId"), change)


def _updated(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    present = pick(action, *_UPDATABLE_FIELDS)
    return _with_annotation_changed(state, action, lambda current: {**current, **present})


def _entry_set(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    entry: Any = action.get("entry")
    if not isinstance(entry, dict):
        return state
    return _with_annotation_changed(
        state, action, lambda current: with_item_set(current, "entries", entry, "id")
    )


def _entry_removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    entry_id = action.get("entryId")
    return _with_annotation_changed(
        state, action, lambda current: with_item_removed(current, "entries", "id", entry_id)
    )


ANNOTATIONS_ACTIONS: ActionTable = {
    "annotations/set": sets_item("annotations", source="annotation", key="id"),
    "annotations/removed": removes_item("annotations", key="id", source="annotationId"),
    "annotations/updated": _updated,
    "annotations/entrySet": _entry_set,
    "annotations/entryRemoved": _entry_removed,
}


reduce_annotations = table_reducer(ANNOTATIONS_ACTIONS)
