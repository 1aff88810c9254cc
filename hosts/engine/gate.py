"""The permission gate: who a connection is now, and whether it may do what it asks.

Grants are read fresh for every command and dispatch (a revoked token or a changed role takes
effect on the next one); a connection whose grants shrink stops watching what it may no longer
read.
"""

from __future__ import annotations

from collections.abc import Callable

from ..protocol.errors import ErrorCode, ProtocolError
from . import access, grants
from .channel import Channel
from .connection import Connection
from .fanout import Fanout
from .principal import ANONYMOUS, USERS_RESOURCE_METADATA, Directory, Principal


def denied(principal: Principal, needed: str, why: str = "") -> ProtocolError:
    """-32009 in the reference's words: `<who> may not <grant> here`."""
    return ProtocolError(ErrorCode.PERMISSION_DENIED, f"{principal.ref} may not {needed} here{why}")


def require(principal: Principal, needed: str, *alternatives: str) -> Principal:
    """The principal, if it holds `needed` (or one of the alternatives); -32009 naming
    `needed` otherwise."""
    if not any(principal.may(n) for n in (needed, *alternatives)):
        raise denied(principal, needed)
    return principal


def readable(principal: Principal, kind: str) -> bool:
    """Whether a principal may watch a channel of a kind."""
    needed = grants.SUBSCRIBE.get(kind)
    return needed is None or any(principal.may(n) for n in needed)


def nobody(uri: str) -> access.Owned | None:
    return None


def nobodys(who: str, channel: Channel) -> ProtocolError | None:
    return None


class Gate:
    def __init__(self, directory: Directory, fanout: Fanout) -> None:
        self.directory = directory
        self._fanout = fanout
        #: Whose a channel is, where it is somebody's: the session it is in, or a terminal's
        #: (the session claiming it, else its opener) (the host answers).
        self.whose: Callable[[str], access.Owned | None] = nobody
        #: Why a principal (by ref) may not watch a resource watch channel beyond its grant
        #: (one over a client's files is that client's person's alone), or None.
        self.watch_owner: Callable[[str, Channel], ProtocolError | None] = nobodys

    def watch_refusal(self, principal: Principal, channel: Channel) -> ProtocolError | None:
        """Why a principal may not watch a channel (-32009), or None: its kind's grant, and,
        for a session's channels (its chats, its changesets), that session; for a terminal,
        the session claiming it or else its opener; for a watch over a client's files, that
        client's being theirs."""
        needed = grants.SUBSCRIBE.get(channel.kind)
        if needed is not None and not any(principal.may(n) for n in needed):
            return denied(principal, needed[0])
        if channel.kind == "resourceWatch":
            return self.watch_owner(principal.ref, channel)
        owned = channel.kind in ("session", "chat", "changeset", "terminal")
        record = self.whose(channel.uri) if owned else None
        reading = access.READ_TERMINAL if channel.kind == "terminal" else access.READ_SESSION
        reason = access.refusal(principal, record, reading) if record else None
        return ProtocolError(ErrorCode.PERMISSION_DENIED, reason) if reason else None

    def may_watch(self, principal: Principal, channel: Channel) -> bool:
        return self.watch_refusal(principal, channel) is None

    async def principal_now(self, conn: Connection) -> Principal:
        """The connection's principal with its grants read again; a revoked token signs out.

        The deployment's own token (and anonymity) has nothing to read again.
        """
        if conn.principal.token_id is None:
            return conn.principal
        principal = await self.directory.refresh(conn.principal)
        if principal is None:
            self.become(conn, ANONYMOUS)
            conn.door_principal = conn.principal
            raise ProtocolError(
                ErrorCode.AUTH_REQUIRED,
                "The token this connection signed in with is no longer valid: sign in again",
                {"resources": [USERS_RESOURCE_METADATA]},
            )
        self.become(conn, principal)
        return principal

    def become(self, conn: Connection, principal: Principal) -> None:
        """The connection is now `principal`: it stops watching what that one may not read."""
        before = conn.principal
        narrowed = not set(principal.grants) >= set(before.grants) or any(
            not set(principal.scoped.get(scope, ())) >= set(held)
            for scope, held in before.scoped.items()
        )
        conn.principal = principal
        if not narrowed:
            return
        for channel in list(conn.subscriptions.values()):
            if not self.may_watch(principal, channel):
                self._fanout.unsubscribe(conn, channel)

    async def require(self, conn: Connection, needed: str, *alternatives: str) -> Principal:
        """The connection's principal read fresh, if it holds `needed` (or an alternative)."""
        return require(await self.principal_now(conn), needed, *alternatives)
