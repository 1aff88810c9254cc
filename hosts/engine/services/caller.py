"""Who asks a service for something, and how what it does is said.

A socket client's dispatch is said back with its origin (and told to its connection even if
it watches no such channel); a command, a REST call or a task is said on this host's account.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.shapes import Origin
from .. import access
from ..audit_trail import Act
from ..channel import Channel
from ..connection import Connection
from ..host import Host
from ..permissions import require
from ..principal import Principal
from ..sessions import LiveChat, LiveSession


@dataclass(frozen=True, slots=True)
class Caller:
    principal: Principal
    #: The dispatch's origin ({clientId, clientSeq}), where a client's action is said back.
    origin: Origin | None = None
    sender: Connection | None = None
    #: Where the call came in (audit_trail.INTERFACES) and the peer's address, if known: what
    #: the audit trail says of an act.
    via: str = "socket"
    address: str = ""

    def act(self, act: str, target_kind: str, target_id: str, **detail: Any) -> Act:
        """The audit trail's record of an act this caller makes."""
        return Act(self.principal.ref, act, target_kind, target_id, self.via, self.address, detail)

    def may(self, needed: str) -> None:
        """-32009 unless the caller holds `needed` (anywhere it can be used)."""
        require(self.principal, needed)

    def may_in(self, session: LiveSession, needed: str) -> None:
        """-32009 unless the caller may do `needed` in `session`, whose it is and where
        (access.py)."""
        access.require(self.principal, session.record, needed)

    def say(self, host: Host, channel: Channel, action: dict[str, Any]) -> None:
        """Say an action as this caller asked it: a dispatch's with its origin."""
        host.fanout.emit(channel, action, origin=self.origin, sender=self.sender)


def user_message(text: str, caller: Caller) -> dict[str, Any]:
    """A plain text sent as the caller: the user's Message, signed with who sent it."""
    return with_sender({"text": text, "origin": {"kind": "user"}}, caller.principal.ref)


def with_sender(item: dict[str, Any], sender: str) -> dict[str, Any]:
    """A copy of an action or a message with who sent it under `_meta['ahpd.sender']`."""
    return {**item, "_meta": {**(item.get("_meta") or {}), "ahpd.sender": sender}}


def signed(action: dict[str, Any], sender: str) -> dict[str, Any]:
    """The action with who sent it: on the action and on its message (the two _meta a client
    is handed); AHP's message origin carries a kind and no person."""
    stamped = with_sender(action, sender)
    message = action.get("message")
    if isinstance(message, dict):
        stamped["message"] = with_sender(message, sender)
    return stamped


def session_of(host: Host, uri: str) -> LiveSession:
    session = host.sessions.session(uri)
    if session is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {uri}")
    return session


def chat_of(host: Host, uri: str) -> LiveChat:
    chat = host.sessions.chat(uri)
    if chat is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Resource not found: {uri}")
    return chat
