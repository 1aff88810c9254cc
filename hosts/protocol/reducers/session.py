"""Reducer for ``SessionState`` (``ahp-session:`` channels).

Port of ``types/channels-session/reducer.ts``. The 1.0 session state is flat:
the session metadata (title, status, working directories, ...) sits directly
on the state next to the chat catalogue, customizations and input queue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._action_table import (
    ActionTable,
    config_changed,
    removes_item,
    sets_field,
    sets_item,
    summary_actions,
    table_reducer,
)
from ._common import (
    STATUS_IN_PROGRESS,
    STATUS_INPUT_NEEDED,
    Action,
    JsonObject,
    as_list,
    assign,
    find_index,
    key_equals,
    remove_at,
    replace_at,
    status_of,
    with_activity,
    with_item_changed,
    with_item_removed,
    with_item_set,
    without,
)

_MCP_SERVER = "mcpServer"


# ─── Status ──────────────────────────────────────────────────────────────────


def _awaits_user(request: Any) -> bool:
    # A client-execution entry is work delegated to a client that has already
    # passed its confirmation; counting it would show the session as waiting
    # on the user for the whole run of every client tool call.
    return not (isinstance(request, dict) and request.get("kind") == "toolClientExecution")


def _with_input_needed_status(status: int, input_needed: Sequence[Any]) -> int:
    """Reflect the session input queue into the activity bits of ``status``.

    Any user-blocking entry makes the activity InputNeeded. Without one, only
    the input-needed-specific bit is cleared: InputNeeded implies InProgress,
    so a blocked turn falls back to InProgress and an idle session stays idle.
    """
    if any(_awaits_user(request) for request in input_needed):
        return with_activity(status, STATUS_INPUT_NEEDED)
    return status & ~(STATUS_INPUT_NEEDED & ~STATUS_IN_PROGRESS)


# ─── Lifecycle ───────────────────────────────────────────────────────────────


def _ready(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    # Never touches `status`: a provisional session can already be running
    # its first turn when it becomes ready.
    return {**state, "lifecycle": "ready"}


def _creation_failed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return assign(state, {"lifecycle": "failed", "creationError": action.get("error")})


# ─── Chat catalogue ──────────────────────────────────────────────────────────


def _chat_removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    next_state = with_item_removed(state, "chats", "resource", action.get("chat"))
    if next_state is state:
        return state
    if state.get("defaultChat") == action.get("chat"):
        # The default chat must name a chat in the catalogue.
        next_state.pop("defaultChat", None)
    return next_state


def _chat_updated(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    changes = action.get("changes")
    if not isinstance(changes, dict):
        return state
    # The resource is the key; a change may not move the entry elsewhere.
    kept = without(changes, "resource")
    return with_item_changed(
        state, "chats", "resource", action.get("chat"), lambda chat: assign(chat, kept)
    )


def _chats_reordered(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """Apply an authoritative order, but only a complete one.

    The order must name every catalogued chat exactly once; anything else
    (missing, duplicated or unknown chats) is ignored rather than guessed at.
    """
    chats = as_list(state.get("chats"))
    order = as_list(action.get("chats"))
    if (
        len(order) != len(chats)
        or not all(isinstance(resource, str) for resource in order)
        or len(set(order)) != len(order)
    ):
        return state
    by_resource = {chat.get("resource"): chat for chat in chats if isinstance(chat, dict)}
    if len(by_resource) != len(chats) or any(resource not in by_resource for resource in order):
        return state
    reordered = [by_resource[resource] for resource in order]
    if all(new is old for new, old in zip(reordered, chats, strict=True)):
        # Re-applying the current order (e.g. on replay) changes nothing.
        return state
    return {**state, "chats": reordered}


# ─── Working directories ─────────────────────────────────────────────────────


def _working_directory_replaced(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    directories = state.get("workingDirectories")
    if not isinstance(directories, list):
        return state
    directory, replacement = action.get("directory"), action.get("replacement")
    if directory not in directories:
        return state
    index = directories.index(directory)
    if replacement in directories and directories.index(replacement) < index:
        # The replacement already sits earlier (e.g. the primary slot): keep
        # that position and just drop the replaced entry.
        return {**state, "workingDirectories": remove_at(directories, index)}
    # Otherwise the replacement takes the replaced slot, and any later copy
    # of it is removed so the list stays a set.
    replaced = [
        replacement if position == index else entry
        for position, entry in enumerate(directories)
        if position == index or entry != replacement
    ]
    return {**state, "workingDirectories": replaced}


# ─── Input queue ─────────────────────────────────────────────────────────────


def _input_needed_set(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    next_state = with_item_set(state, "inputNeeded", action.get("request"), "id")
    if next_state is state:
        return state
    status = _with_input_needed_status(status_of(state), next_state["inputNeeded"])
    return {**next_state, "status": status}


def _input_needed_removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    next_state = with_item_removed(state, "inputNeeded", "id", action.get("id"))
    if next_state is state:
        return state
    remaining = next_state["inputNeeded"]
    status = _with_input_needed_status(status_of(state), remaining)
    # An emptied queue becomes absent rather than an empty list.
    return assign(next_state, {"status": status, "inputNeeded": remaining or None})


# ─── Customizations ──────────────────────────────────────────────────────────


def _apply_enablement(customization: JsonObject, enablement: list[Any]) -> JsonObject:
    """Record new enablement decisions on one customization.

    Plugins and MCP servers keep the decisions themselves (an empty list
    restores the default by removing them); every other kind keeps only the
    legacy ``enabled`` flag, taken from the first (most specific) decision.
    """
    if customization.get("type") in ("plugin", _MCP_SERVER):
        if enablement:
            return {**customization, "enablement": list(enablement)}
        return without(customization, "enablement")
    first = enablement[0] if enablement else None
    enabled = first.get("enabled") if isinstance(first, dict) else None
    return {**customization, "enabled": True if enabled is None else enabled}


def _with_customization_changed(
    state: JsonObject,
    target: Any,
    change: Callable[[JsonObject], JsonObject | None],
    *,
    first_container_only: bool = False,
) -> JsonObject:
    """The customization ``target`` replaced by ``change(entry)``, or removed where it is ``None``.

    The top level is searched first (a host may list MCP servers there); only
    without a match there are the children of the containers searched, every
    container or just the first holding ``target``. A ``change`` returning its
    argument, or no customization ``target`` at all, leaves ``state`` as is.
    """
    customizations = state.get("customizations")
    if not isinstance(customizations, list):
        return state
    top = find_index(customizations, key_equals("id", target))
    if top >= 0:
        entry = customizations[top]
        new_entry = change(entry)
        if new_entry is entry:
            return state
        if new_entry is None:
            return {**state, "customizations": remove_at(customizations, top)}
        return {**state, "customizations": replace_at(customizations, top, new_entry)}
    changed = False
    updated = list(customizations)
    for position, container in enumerate(customizations):
        children = container.get("children") if isinstance(container, dict) else None
        if not isinstance(children, list) or container.get("type") == _MCP_SERVER:
            continue
        child = find_index(children, key_equals("id", target))
        if child < 0:
            continue
        new_child = change(children[child])
        if new_child is not children[child]:
            new_children = (
                remove_at(children, child)
                if new_child is None
                else replace_at(children, child, new_child)
            )
            updated[position] = {**container, "children": new_children}
            changed = True
        if first_container_only:
            break
    return {**state, "customizations": updated} if changed else state


def _customization_toggled(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    enablement = action.get("enablement")
    if not isinstance(enablement, list):
        return state
    return _with_customization_changed(
        state,
        action.get("id"),
        lambda customization: _apply_enablement(customization, enablement),
        first_container_only=True,
    )


def _customization_removed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    # Removing a container removes its children with it.
    return _with_customization_changed(state, action.get("id"), lambda customization: None)


def _update_mcp_server(
    state: JsonObject, server_id: Any, update: Callable[[JsonObject], JsonObject]
) -> JsonObject:
    """Apply ``update`` to the MCP server customization ``server_id``.

    An id that names a customization of another type, or nothing at all, is a no-op.
    """

    def update_server(entry: JsonObject) -> JsonObject:
        return update(entry) if entry.get("type") == _MCP_SERVER else entry

    return _with_customization_changed(state, server_id, update_server)


def _moved_to_background(entry: JsonObject) -> JsonObject:
    # Only a server that is starting and blocking the turn can be moved to
    # the background; anything else is already not in the way.
    server_state = entry.get("state")
    if (
        isinstance(server_state, dict)
        and server_state.get("kind") == "starting"
        and server_state.get("blocking")
    ):
        return {**entry, "state": {**server_state, "blocking": False}}
    return entry


def _mcp_server_state_changed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    changes = {"state": action.get("state"), "channel": action.get("channel")}
    return _update_mcp_server(state, action.get("id"), lambda entry: assign(entry, changes))


def _mcp_server_start_requested(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    starting = {"state": {"kind": "starting"}, "channel": None}
    return _update_mcp_server(state, action.get("id"), lambda entry: assign(entry, starting))


def _mcp_server_stop_requested(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    stopped = {"state": {"kind": "stopped"}, "channel": None}
    return _update_mcp_server(state, action.get("id"), lambda entry: assign(entry, stopped))


def _mcp_server_background_requested(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return _update_mcp_server(state, action.get("id"), _moved_to_background)


# ─── Reducer ─────────────────────────────────────────────────────────────────

SESSION_ACTIONS: ActionTable = {
    # Lifecycle.
    "session/ready": _ready,
    "session/creationFailed": _creation_failed,
    # Chat catalogue.
    "session/chatAdded": sets_item("chats", source="summary", key="resource"),
    "session/chatRemoved": _chat_removed,
    "session/chatUpdated": _chat_updated,
    "session/chatsReordered": _chats_reordered,
    "session/defaultChatChanged": sets_field("defaultChat"),
    # Metadata, with the summary fields a chat shares (read, archived, activity,
    # changesets, working directories).
    "session/titleChanged": sets_field("title"),
    **summary_actions("session"),
    "session/configChanged": config_changed,
    "session/metaChanged": sets_field("_meta"),
    "session/serverToolsChanged": sets_field("serverTools", source="tools"),
    # Connected clients.
    "session/activeClientSet": sets_item("activeClients", source="activeClient", key="clientId"),
    "session/activeClientRemoved": removes_item("activeClients", key="clientId", source="clientId"),
    # Working directories beyond the shared set and remove.
    "session/workingDirectoryReplaced": _working_directory_replaced,
    # Input queue.
    "session/inputNeededSet": _input_needed_set,
    "session/inputNeededRemoved": _input_needed_removed,
    # Customizations.
    "session/customizationsChanged": sets_field("customizations"),
    "session/customizationToggled": _customization_toggled,
    "session/customizationUpdated": sets_item("customizations", source="customization", key="id"),
    "session/customizationRemoved": _customization_removed,
    "session/mcpServerStateChanged": _mcp_server_state_changed,
    "session/mcpServerStartRequested": _mcp_server_start_requested,
    "session/mcpServerStopRequested": _mcp_server_stop_requested,
    "session/mcpServerBackgroundRequested": _mcp_server_background_requested,
}


reduce_session = table_reducer(SESSION_ACTIONS)
