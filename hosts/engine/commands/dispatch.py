"""dispatchAction: the pipeline a client's action goes through before anybody sees it.

Known type, and one a client may send -> a target this host knows -> the action's own checks ->
sequenced, reduced, ringed, delivered to every watcher with the sender's origin. A refusal is an
envelope too: the next serverSeq, a rejectionReason, and no state change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...protocol.actions import action_spec
from ...protocol.errors import ProtocolError, invalid_params
from ...protocol.uris import canonical
from .. import grants, root_config
from ..channel import Channel
from ..session_actions import chat_action, session_action
from .params import required_int, required_str

if TYPE_CHECKING:
    from ..connection import Connection
    from ..host import Host

log = logging.getLogger("ahpd.engine")

#: Actions VS Code's host refuses in its own words whatever they name.
UNSUPPORTED = frozenset({"chat/workingDirectorySet", "chat/workingDirectoryRemoved"})
#: Actions that carry a person's message, said with who sent it under _meta['ahpd.sender'].
SIGNED = frozenset({"chat/turnStarted", "chat/pendingMessageSet"})
#: A session's read or archive toggle naming a session nobody has is dropped without a word.
DROPPED_FOR_UNKNOWN_SESSION = frozenset({"session/isReadChanged", "session/isArchivedChanged"})


async def dispatch_action(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "dispatchAction", "channel")
    client_seq = required_int(params, "dispatchAction", "clientSeq")
    raw = params.get("action")
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise invalid_params("dispatchAction: action must be an object with a string type")
    action: dict[str, Any] = raw
    assert conn.client_id is not None
    origin = {"clientId": conn.client_id, "clientSeq": client_seq}
    action_type: str = action["type"]
    target = host.find_channel(uri)

    def refuse(reason: str) -> None:
        channel = target or Channel(canonical(uri), "unknown", None)
        host.emit(channel, action, origin=origin, sender=conn, rejection=reason)

    spec = action_spec(action_type)
    if spec is None or not spec.client_dispatchable:
        return refuse(f"Server-only action: {action_type}")
    if action_type in UNSUPPORTED:
        return refuse(f"Unsupported action: {action_type}")
    needed = grants.action_grant(action)
    if needed is not None:
        try:
            principal = await host.principal_now(conn)
        except ProtocolError as exc:
            return refuse(exc.message)
        except Exception:
            # The client applied its action already: it is owed an answer whatever failed.
            log.exception("reading who %s is failed", conn.client_id)
            return refuse("The host could not check this action's grants; try again.")
        if not principal.may(needed):
            return refuse(f"{principal.ref} may not {needed} here")
        if action_type in SIGNED:
            action = signed(action, principal.ref)
        # The target may have gone (or come) while the grants were read.
        target = host.find_channel(uri)
    if target is None:
        return _unknown_target(host, conn, uri, action, origin, refuse)
    if target.kind != spec.channel_kind:
        return refuse(f"{action_type} is not an action of {target.uri}")
    reason = _check(host, target, action)
    if reason is not None:
        return refuse(reason)
    if action_type == "root/configChanged":
        return host.change_root_config(action, origin=origin, sender=conn)

    def say() -> None:
        assert target is not None
        host.emit(target, action, origin=origin, sender=conn)

    session = host.sessions.sessions.get(target.uri)
    chat = host.sessions.chats.get(target.uri)
    if target.kind == "session" and session is not None:
        reason = session_action(session, action, say)
    elif target.kind == "chat" and chat is not None:
        reason = chat_action(chat, action, say)
    else:
        reason = f"{action_type} is not supported by this host yet"
    if reason is not None:
        refuse(reason)
    return None


def _unknown_target(
    host: Host,
    conn: Connection,
    uri: str,
    action: dict[str, Any],
    origin: dict[str, Any],
    refuse: Callable[[str], None],
) -> None:
    """An action on a target nothing here knows, answered as VS Code's host answers it."""
    action_type: str = action["type"]
    spec = action_spec(action_type)
    assert spec is not None
    if spec.channel_kind == "session":
        if action_type in DROPPED_FOR_UNKNOWN_SESSION:
            return None
        if action_type in ("session/activeClientSet", "session/activeClientRemoved"):
            return refuse(f"No agent for session: {uri}")
        return refuse(f"Session not found: {uri}")
    if spec.channel_kind == "chat":
        if action_type == "chat/isReadChanged":
            return refuse("Only a known chat can change its read state.")
        if action_type == "chat/isArchivedChanged":
            return refuse("Only a known independently manageable non-default chat can be archived.")
        # Said back on the channel the client named, with its origin; nothing is kept, reduced
        # or run for it.
        host.emit(
            Channel(uri, "chat", None), action, origin=origin, sender=conn, reduce_state=False
        )
        return None
    return refuse(f"Resource not found: {uri}")


def _check(host: Host, channel: Channel, action: dict[str, Any]) -> str | None:
    """The action's own checks; why it cannot be taken, or None."""
    if action["type"] == "root/configChanged":
        return root_config.check_push(action.get("config"), action.get("replace"))
    return None


def signed(action: dict[str, Any], sender: str) -> dict[str, Any]:
    """The action with who sent it: on the action and on its message (the two _meta a client
    is handed); AHP's message origin carries a kind and no person."""
    stamped = dict(action)
    stamped["_meta"] = {**(action.get("_meta") or {}), "ahpd.sender": sender}
    message = action.get("message")
    if isinstance(message, dict):
        stamped["message"] = {
            **message,
            "_meta": {**(message.get("_meta") or {}), "ahpd.sender": sender},
        }
    return stamped
