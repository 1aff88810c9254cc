"""Action tables: how every reducer dispatches, and the handlers several kinds share.

A kind's reducer is a table from action ``type`` to a handler. A handler takes
the state, the action and the host clock (epoch milliseconds) and returns the
next state; every handler accepts the clock, though few actions need it. The
shared handlers are built by the ``sets_*``/``removes_*`` factories, whose
names read as what the action does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeAlias

from ._common import (
    STATUS_IS_ARCHIVED,
    STATUS_IS_READ,
    Action,
    JsonObject,
    as_list,
    as_object,
    assign,
    remove_at,
    status_of,
    with_item_removed,
    with_item_set,
    with_status_flag,
)

Handler: TypeAlias = Callable[[JsonObject, Action, int], JsonObject]
"""Reduce one action type: ``handler(state, action, now_ms) -> next state``."""

ActionTable: TypeAlias = Mapping[str, Handler]
"""Action type -> the handler that reduces it."""


class KindReducer(Protocol):
    """A channel kind's reducer, as ``REDUCERS`` holds it."""

    def __call__(self, state: JsonObject, action: Action, *, now_ms: int) -> JsonObject: ...


def table_reducer(table: ActionTable) -> KindReducer:
    """The reducer that reduces each action by its handler in ``table``.

    ``now_ms`` (epoch milliseconds) only fills in a timestamp an action should
    have carried but did not. A type the table does not name (or a ``type``
    that is not a string) leaves ``state`` as is, so a client newer than this
    host is not broken by it.
    """
    # A closure rather than a callable object: reducing is on the path of every
    # action said, and calling an instance costs several times a function call.
    handler_for = table.get

    def reduce(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
        kind = action.get("type")
        handler = handler_for(kind) if isinstance(kind, str) else None
        return state if handler is None else handler(state, action, now_ms)

    return reduce


def unchanged(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """An action the host acts on but that changes no state (a request, a side effect)."""
    return state


def sets_field(field: str, *, source: str | None = None) -> Handler:
    """Handler: ``state[field]`` becomes ``action[source]`` (``source`` defaults to ``field``).

    An absent or null value removes the field.
    """
    name = source or field

    def handler(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
        return assign(state, {field: action.get(name)})

    return handler


def _sets_status_flag(flag: int, *, source: str) -> Handler:
    """Handler: the ``flag`` bit of ``state["status"]`` follows the truth of ``action[source]``."""

    def handler(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
        on = bool(action.get(source))
        return {**state, "status": with_status_flag(status_of(state), flag, on)}

    return handler


def sets_item(field: str, *, source: str, key: str) -> Handler:
    """Handler: the object ``action[source]`` set into the list ``state[field]`` by its ``key``."""

    def handler(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
        return with_item_set(state, field, action.get(source), key)

    return handler


def removes_item(field: str, *, key: str, source: str) -> Handler:
    """Handler: the entry of ``state[field]`` whose ``key`` is ``action[source]`` removed."""

    def handler(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
        return with_item_removed(state, field, key, action.get(source))

    return handler


def config_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """Apply a root/session ``configChanged`` action to ``state["config"]``.

    No-op without an existing config. ``replace: true`` swaps the values for
    the action's; otherwise the action's entries are merged over them.
    """
    config = as_object(state.get("config"))
    if not config:
        return state
    incoming = as_object(action.get("config")) or {}
    if action.get("replace"):
        values = dict(incoming)
    else:
        values = {**(as_object(config.get("values")) or {}), **incoming}
    return {**state, "config": {**config, "values": values}}


def _working_directory_set(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """`workingDirectories` as a set kept in insertion order: the directory appended if absent."""
    directory: Any = action.get("directory")
    directories = as_list(state.get("workingDirectories"))
    if directory is None or directory in directories:
        return state
    return {**state, "workingDirectories": [*directories, directory]}


def _working_directory_removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """The directory taken out of `workingDirectories`; a no-op when it is not there."""
    directory: Any = action.get("directory")
    current = state.get("workingDirectories")
    if not isinstance(current, list) or directory not in current:
        return state
    return {**state, "workingDirectories": remove_at(current, current.index(directory))}


def summary_actions(kind: str) -> dict[str, Handler]:
    """The actions a session and a chat both take on the summary fields they share.

    ``<kind>/isReadChanged`` and ``<kind>/isArchivedChanged`` set a status flag,
    ``<kind>/activityChanged`` and ``<kind>/changesetsChanged`` a field, and
    ``<kind>/workingDirectorySet`` and ``<kind>/workingDirectoryRemoved`` keep
    ``workingDirectories`` a set in insertion order (a chat's is a subset of its
    session's).
    """
    return {
        f"{kind}/isReadChanged": _sets_status_flag(STATUS_IS_READ, source="isRead"),
        f"{kind}/isArchivedChanged": _sets_status_flag(STATUS_IS_ARCHIVED, source="isArchived"),
        f"{kind}/activityChanged": sets_field("activity"),
        f"{kind}/changesetsChanged": sets_field("changesets"),
        f"{kind}/workingDirectorySet": _working_directory_set,
        f"{kind}/workingDirectoryRemoved": _working_directory_removed,
    }
