"""Reducer for ``SessionState`` (``ahp-session:`` channels).

Port of ``types/channels-session/reducer.ts``. The 1.0 session state is flat:
the session metadata (title, status, working directories, ...) sits directly
on the state next to the chat catalogue, customizations and input queue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._common import (
    STATUS_IN_PROGRESS,
    STATUS_INPUT_NEEDED,
    STATUS_IS_ARCHIVED,
    STATUS_IS_READ,
    Action,
    JsonObject,
    as_list,
    assign,
    directory_added,
    directory_removed,
    find_index,
    key_equals,
    merge_config,
    remove_at,
    replace_at,
    status_of,
    upsert,
    with_activity,
    with_status_flag,
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


# ─── Chat catalogue ──────────────────────────────────────────────────────────


def _chat_removed(state: JsonObject, action: Action) -> JsonObject:
    chats = as_list(state.get("chats"))
    index = find_index(chats, key_equals("resource", action.get("chat")))
    if index < 0:
        return state
    next_state = {**state, "chats": remove_at(chats, index)}
    if state.get("defaultChat") == action.get("chat"):
        # The default chat must name a chat in the catalogue.
        next_state.pop("defaultChat", None)
    return next_state


def _chat_updated(state: JsonObject, action: Action) -> JsonObject:
    chats = as_list(state.get("chats"))
    index = find_index(chats, key_equals("resource", action.get("chat")))
    changes = action.get("changes")
    if index < 0 or not isinstance(changes, dict):
        return state
    # The resource is the key; a change may not move the entry elsewhere.
    merged = assign(chats[index], without(changes, "resource"))
    return {**state, "chats": replace_at(chats, index, merged)}


def _chats_reordered(state: JsonObject, action: Action) -> JsonObject:
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


def _working_directory_replaced(state: JsonObject, action: Action) -> JsonObject:
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


def _input_needed_set(state: JsonObject, action: Action) -> JsonObject:
    request = action.get("request")
    if not isinstance(request, dict):
        return state
    input_needed = upsert(as_list(state.get("inputNeeded")), request, "id")
    status = _with_input_needed_status(status_of(state), input_needed)
    return {**state, "inputNeeded": input_needed, "status": status}


def _input_needed_removed(state: JsonObject, action: Action) -> JsonObject:
    queue = state.get("inputNeeded")
    if not isinstance(queue, list):
        return state
    index = find_index(queue, key_equals("id", action.get("id")))
    if index < 0:
        return state
    remaining = remove_at(queue, index)
    status = _with_input_needed_status(status_of(state), remaining)
    # An emptied queue becomes absent rather than an empty list.
    return assign(state, {"status": status, "inputNeeded": remaining or None})


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


def _customization_toggled(state: JsonObject, action: Action) -> JsonObject:
    customizations = state.get("customizations")
    enablement = action.get("enablement")
    if not isinstance(customizations, list) or not isinstance(enablement, list):
        return state
    target = action.get("id")
    top = find_index(customizations, key_equals("id", target))
    if top >= 0:
        updated = _apply_enablement(customizations[top], enablement)
        return {**state, "customizations": replace_at(customizations, top, updated)}
    for position, container in enumerate(customizations):
        if not isinstance(container, dict) or container.get("type") == _MCP_SERVER:
            continue
        children = container.get("children")
        if not isinstance(children, list):
            continue
        child = find_index(children, key_equals("id", target))
        if child < 0:
            continue
        new_children = replace_at(children, child, _apply_enablement(children[child], enablement))
        new_container = {**container, "children": new_children}
        return {**state, "customizations": replace_at(customizations, position, new_container)}
    return state


def _customization_removed(state: JsonObject, action: Action) -> JsonObject:
    customizations = state.get("customizations")
    if not isinstance(customizations, list):
        return state
    target = action.get("id")
    top = find_index(customizations, key_equals("id", target))
    if top >= 0:
        # Removing a container removes its children with it.
        return {**state, "customizations": remove_at(customizations, top)}
    changed = False
    updated: list[Any] = []
    for container in customizations:
        children = container.get("children") if isinstance(container, dict) else None
        if isinstance(children, list) and container.get("type") != _MCP_SERVER:
            child = find_index(children, key_equals("id", target))
            if child >= 0:
                container = {**container, "children": remove_at(children, child)}
                changed = True
        updated.append(container)
    return {**state, "customizations": updated} if changed else state


def _update_mcp_server(
    state: JsonObject, server_id: Any, update: Callable[[JsonObject], JsonObject]
) -> JsonObject:
    """Apply ``update`` to the MCP server customization ``server_id``.

    The top level is searched first (a host may list servers there), then
    the children of every container. An id that names a customization of
    another type, or nothing at all, is a no-op.
    """
    customizations = state.get("customizations")
    if not isinstance(customizations, list):
        return state
    top = find_index(customizations, key_equals("id", server_id))
    if top >= 0:
        entry = customizations[top]
        if entry.get("type") != _MCP_SERVER:
            return state
        new_entry = update(entry)
        if new_entry is entry:
            return state
        return {**state, "customizations": replace_at(customizations, top, new_entry)}
    changed = False
    updated: list[Any] = []
    for container in customizations:
        children = container.get("children") if isinstance(container, dict) else None
        if isinstance(children, list) and container.get("type") != _MCP_SERVER:
            child = find_index(children, key_equals("id", server_id))
            if child >= 0 and children[child].get("type") == _MCP_SERVER:
                new_child = update(children[child])
                if new_child is not children[child]:
                    container = {**container, "children": replace_at(children, child, new_child)}
                    changed = True
        updated.append(container)
    return {**state, "customizations": updated} if changed else state


def _mcp_server_background_requested(entry: JsonObject) -> JsonObject:
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


# ─── Reducer ─────────────────────────────────────────────────────────────────


def reduce_session(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one session action to ``state`` and return the resulting state.

    ``now_ms`` is accepted for a uniform signature; no session action stamps a
    time in 1.0. Unknown action types leave the state unchanged.
    """
    kind: Any = action.get("type")

    # Lifecycle. session/ready must not touch `status`: a provisional session
    # can already be running its first turn when it becomes ready.
    if kind == "session/ready":
        return {**state, "lifecycle": "ready"}
    if kind == "session/creationFailed":
        return assign(state, {"lifecycle": "failed", "creationError": action.get("error")})

    # Chat catalogue.
    if kind == "session/chatAdded":
        summary = action.get("summary")
        if not isinstance(summary, dict):
            return state
        return {**state, "chats": upsert(as_list(state.get("chats")), summary, "resource")}
    if kind == "session/chatRemoved":
        return _chat_removed(state, action)
    if kind == "session/chatUpdated":
        return _chat_updated(state, action)
    if kind == "session/chatsReordered":
        return _chats_reordered(state, action)
    if kind == "session/defaultChatChanged":
        return assign(state, {"defaultChat": action.get("defaultChat")})

    # Metadata.
    if kind == "session/titleChanged":
        return assign(state, {"title": action.get("title")})
    if kind == "session/isReadChanged":
        status = with_status_flag(status_of(state), STATUS_IS_READ, bool(action.get("isRead")))
        return {**state, "status": status}
    if kind == "session/isArchivedChanged":
        on = bool(action.get("isArchived"))
        return {**state, "status": with_status_flag(status_of(state), STATUS_IS_ARCHIVED, on)}
    if kind == "session/activityChanged":
        return assign(state, {"activity": action.get("activity")})
    if kind == "session/changesetsChanged":
        return assign(state, {"changesets": action.get("changesets")})
    if kind == "session/configChanged":
        return merge_config(state, action)
    if kind == "session/metaChanged":
        return assign(state, {"_meta": action.get("_meta")})
    if kind == "session/serverToolsChanged":
        return assign(state, {"serverTools": action.get("tools")})

    # Connected clients.
    if kind == "session/activeClientSet":
        client = action.get("activeClient")
        if not isinstance(client, dict):
            return state
        clients = upsert(as_list(state.get("activeClients")), client, "clientId")
        return {**state, "activeClients": clients}
    if kind == "session/activeClientRemoved":
        clients = as_list(state.get("activeClients"))
        index = find_index(clients, key_equals("clientId", action.get("clientId")))
        if index < 0:
            return state
        return {**state, "activeClients": remove_at(clients, index)}

    # Working directories: a set kept in insertion order.
    if kind == "session/workingDirectorySet":
        return directory_added(state, action.get("directory"))
    if kind == "session/workingDirectoryRemoved":
        return directory_removed(state, action.get("directory"))
    if kind == "session/workingDirectoryReplaced":
        return _working_directory_replaced(state, action)

    # Input queue.
    if kind == "session/inputNeededSet":
        return _input_needed_set(state, action)
    if kind == "session/inputNeededRemoved":
        return _input_needed_removed(state, action)

    # Customizations.
    if kind == "session/customizationsChanged":
        return assign(state, {"customizations": action.get("customizations")})
    if kind == "session/customizationToggled":
        return _customization_toggled(state, action)
    if kind == "session/customizationUpdated":
        customization = action.get("customization")
        if not isinstance(customization, dict):
            return state
        customizations = upsert(as_list(state.get("customizations")), customization, "id")
        return {**state, "customizations": customizations}
    if kind == "session/customizationRemoved":
        return _customization_removed(state, action)
    if kind == "session/mcpServerStateChanged":
        changes = {"state": action.get("state"), "channel": action.get("channel")}
        return _update_mcp_server(state, action.get("id"), lambda entry: assign(entry, changes))
    if kind == "session/mcpServerStartRequested":
        starting = {"state": {"kind": "starting"}, "channel": None}
        return _update_mcp_server(state, action.get("id"), lambda entry: assign(entry, starting))
    if kind == "session/mcpServerStopRequested":
        stopped = {"state": {"kind": "stopped"}, "channel": None}
        return _update_mcp_server(state, action.get("id"), lambda entry: assign(entry, stopped))
    if kind == "session/mcpServerBackgroundRequested":
        return _update_mcp_server(state, action.get("id"), _mcp_server_background_requested)

    return state
