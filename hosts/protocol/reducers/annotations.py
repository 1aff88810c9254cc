"""Reducer for ``AnnotationsState`` (``ahp-session:/<id>/annotations`` channels).

Port of ``types/channels-annotations/reducer.ts``. Annotations and their
entries keep dispatch order: new ids are appended, known ids replaced in
place, and an action naming an unknown id changes nothing. Keeping at least
one entry per annotation is the producer's job, not the reducer's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._common import (
    Action,
    JsonObject,
    as_list,
    find_index,
    key_equals,
    remove_at,
    replace_at,
    upsert,
)

#: Fields ``annotations/updated`` may overwrite; absent ones are left alone.
_UPDATABLE_FIELDS = ("origin", "resource", "range", "resolved")


def _with_annotation(
    state: JsonObject,
    annotation_id: Any,
    change: Callable[[JsonObject], JsonObject | None],
) -> JsonObject:
    """Replace the annotation ``annotation_id`` by ``change(annotation)``.

    An unknown id, or ``change`` returning ``None``, leaves ``state`` as is.
    """
    annotations = as_list(state.get("annotations"))
    index = find_index(annotations, key_equals("id", annotation_id))
    if index < 0:
        return state
    updated = change(annotations[index])
    if updated is None:
        return state
    return {**state, "annotations": replace_at(annotations, index, updated)}


def reduce_annotations(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one annotations action to ``state`` and return the resulting state.

    ``now_ms`` is accepted for a uniform signature and unused. Unknown action
    types leave the state unchanged.
    """
    kind: Any = action.get("type")
    annotations = as_list(state.get("annotations"))

    if kind == "annotations/set":
        annotation = action.get("annotation")
        if not isinstance(annotation, dict):
            return state
        return {**state, "annotations": upsert(annotations, annotation, "id")}

    if kind == "annotations/removed":
        index = find_index(annotations, key_equals("id", action.get("annotationId")))
        if index < 0:
            return state
        return {**state, "annotations": remove_at(annotations, index)}

    if kind == "annotations/updated":
        present = {
            field: action[field] for field in _UPDATABLE_FIELDS if action.get(field) is not None
        }
        return _with_annotation(
            state, action.get("annotationId"), lambda current: {**current, **present}
        )

    if kind == "annotations/entrySet":
        entry = action.get("entry")
        if not isinstance(entry, dict):
            return state

        def set_entry(current: JsonObject) -> JsonObject:
            return {**current, "entries": upsert(as_list(current.get("entries")), entry, "id")}

        return _with_annotation(state, action.get("annotationId"), set_entry)

    if kind == "annotations/entryRemoved":

        def remove_entry(current: JsonObject) -> JsonObject | None:
            entries = as_list(current.get("entries"))
            index = find_index(entries, key_equals("id", action.get("entryId")))
            if index < 0:
                return None
            return {**current, "entries": remove_at(entries, index)}

        return _with_annotation(state, action.get("annotationId"), remove_entry)

    return state
