"""A client's change to a session's folders: session/workingDirectorySet, Removed, Replaced.

Taken on VS Code's host's conditions, checked in its order and refused in its words (seed 000):
who sent it and on what channel (`sender_refusal`, before the target is read), then the
session, its agent, and the folders named (`do_change_working_directories`). Index 0 is the
agent's process root, pinned: never removed, moved only by a replacement (the capability this
host advertises, host.FOLDERS_PINNED). A folder added must be one its sender could have made a
session in (the fence createSession keeps, resources/served.py). The set is kept with the
session; each chat's agent takes it at its next turn, opened again there and resumed by its
backend id (sessions/opening.py). A change that changes nothing (a folder held already, one
not held) starts nothing and is said to every client of the session all the same.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..host import Host
from ..sessions import LiveSession
from .caller import Caller

#: The three, by what follows `session/` in their type (the rules name the types whole).
SET, REMOVED, REPLACED = (
    "workingDirectorySet",
    "workingDirectoryRemoved",
    "workingDirectoryReplaced",
)

#: The VS Code windows VS Code's host refuses these actions from: its Agents window, which
#: names itself so in clientInfo (seed 000, "A VS Code window names itself ..."). A client
#: that names no VS Code window (a terminal client, a script) is taken: clientInfo is
#: informational in the protocol, and no client but VS Code's names a kind of window.
NOT_EDITOR_WINDOWS = frozenset({"vscode-agents-window"})


def sender_refusal(caller: Caller, channel_kind: str | None) -> str | None:
    """Why VS Code's host would refuse the action before reading its target: sent from a
    window that is not an editor window, or on a channel that is not a session's (None: a
    scheme a session may have, answered as a target later)."""
    sender = caller.sender
    if sender is not None and sender.client_name in NOT_EDITOR_WINDOWS:
        return "Session working-directory actions require an Editor Window client."
    if channel_kind not in ("session", None):
        return "Session working-directory actions require a session channel."
    return None


def do_change_working_directories(
    host: Host, caller: Caller, session: LiveSession, action: dict[str, Any]
) -> str | None:
    """Take a client's change to the session's folders, or say why not (nothing changed)."""
    uri = session.record.uri
    held: list[str] = list(session.channel.state.get("workingDirectories") or [])
    if session.channel.state.get("lifecycle") != "ready" or not held:
        return f"Session is not ready for working-directory changes: {uri}"
    # A window of a multi-root workspace works in its folders; a session with chats of its
    # own besides the default one has chats that took the folders they were made with.
    if not session.record.multi_root or len(session.record.chats) != 1:
        return f"Session does not support dynamic working-directory changes: {uri}"
    provider = session.record.provider
    agent = host.sessions.agents.get(provider)
    if not getattr(agent, "multiple_working_directories", False):
        return f"Provider does not support dynamic working-directory changes: {provider}"
    kind = action["type"].removeprefix("session/")
    directory: str = action["directory"]
    named = [directory, action["replacement"]] if kind == REPLACED else [directory]
    for folder in named:
        if urlsplit(folder).scheme != "file":
            return f"Working directory must be a file URI: {folder}"
    if kind == REMOVED and directory in held:
        if held[0] == directory:
            return "The primary working directory cannot be removed."
        for chat in session.chats.values():
            if directory in (chat.state().get("workingDirectories") or []):
                return (
                    f"Cannot remove working directory {directory} because chat {chat.uri} "
                    "is scoped to it."
                )
    added = (
        directory
        if kind == SET
        else action["replacement"]
        if kind == REPLACED and directory in held
        else None
    )
    if added is not None and added not in held:
        # Raises -32602 naming it: outside what this host serves, or no folder.
        host.served.folder_of(added, action["type"])
    caller.say(host, session.channel, action)
    folders = list(session.channel.state.get("workingDirectories") or [])
    if folders == session.record.working_directories:
        return None
    first_moved = folders[:1] != session.record.working_directories[:1]
    session.record.working_directories = folders
    if session.mcp is not None:
        # The MCP servers the host runs for it ran in the old folders' sandbox.
        session.mcp.folders_moved()
    if first_moved:
        # The changesets are the first folder's (changesets/scopes.py).
        host.changesets.first_folder_moved(session)
    # Its row in every listing shows its folders.
    host.sessions.touch(session, moved=("workingDirectories",))
    return None
