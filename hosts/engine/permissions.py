"""The permission gate: who a connection is now, and whether it may do what it asks.

A person's principal (their grants, their memberships) is read from the directory once per
token and kept, until the Django side says something it was read from changed (`forget`: a
token revoked, a membership, a role, a person, a team or a project saved or removed, in this
process or another). So a revoked token or a changed role takes effect on the next command
without a database read on every command, which the fan-out's hot path cannot afford; a
connection whose grants shrink stops watching what it may no longer read at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

from ..protocol.errors import ErrorCode, ProtocolError
from . import access, grants
from .channel import Channel
from .connection import Connection
from .fanout import Fanout
from .principal import ANONYMOUS, USERS_RESOURCE_METADATA, Directory, Principal

log = logging.getLogger("ahpd.engine")

#: How long a kept principal is trusted without being told anything: a backstop for a change
#: nobody could tell this engine of (a server that did not answer the command that made it, a
#: row written by hand). Every change the Django side makes is told at once (`forget`).
PRINCIPAL_MAX_AGE_S = 60.0


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


class Permissions:
    def __init__(self, directory: Directory, fanout: Fanout) -> None:
        self.directory = directory
        self._fanout = fanout
        #: Whose a channel is, where it is somebody's: the session it is in, or a terminal's
        #: (the session claiming it, else its opener) (the host answers).
        self.whose: Callable[[str], access.Owned | None] = nobody
        #: Why a principal (by ref) may not watch a resource watch channel beyond its grant
        #: (one over a client's files is that client's person's alone), or None.
        self.watch_owner: Callable[[str, Channel], ProtocolError | None] = nobodys
        #: A person's principal by the token they signed in with, as read from the directory
        #: since the last `forget` that named it; None for a token that signs nobody in any
        #: more (revoked, removed, its person deactivated). Invariant: an entry here is what
        #: the directory would answer now, since every change to what it reads is forgotten.
        self._known: dict[int, Principal | None] = {}
        #: When each kept principal was read (time.monotonic), for PRINCIPAL_MAX_AGE_S.
        self._read_at: dict[int, float] = {}
        #: Moved by every `forget`: a read begun before one may have seen the rows as they were
        #: before the change, so it answers the command that asked but is not kept.
        self._epoch = 0
        self._rereads: set[asyncio.Task[None]] = set()

    def watch_refusal(self, principal: Principal, channel: Channel) -> ProtocolError | None:
        """Why a principal may not watch a channel (-32009), or None: its kind's grant, and,
        for a session's channels (its chats, changesets and annotations), that session; for a
        terminal, the session claiming it or else its opener; for a watch over a client's
        files, that client's being theirs."""
        needed = grants.SUBSCRIBE.get(channel.kind)
        if needed is not None and not any(principal.may(n) for n in needed):
            return denied(principal, needed[0])
        if channel.kind == "resourceWatch":
            return self.watch_owner(principal.ref, channel)
        owned = channel.kind in ("session", "chat", "changeset", "annotations", "terminal")
        record = self.whose(channel.uri) if owned else None
        reading = access.READ_TERMINAL if channel.kind == "terminal" else access.READ_SESSION
        reason = access.refusal(principal, record, reading) if record else None
        return ProtocolError(ErrorCode.PERMISSION_DENIED, reason) if reason else None

    def may_watch(self, principal: Principal, channel: Channel) -> bool:
        return self.watch_refusal(principal, channel) is None

    async def principal_now(self, conn: Connection) -> Principal:
        """The connection's principal as the directory says now; a revoked token signs out.

        Read once per token and kept until `forget` (no database read on the hot path). The
        deployment's own token (and anonymity) has nothing to read again.
        """
        token = conn.principal.token_id
        if token is None:
            return conn.principal
        if token in self._known and time.monotonic() - self._read_at[token] < PRINCIPAL_MAX_AGE_S:
            principal = self._known[token]
        else:
            principal = await self._read(conn.principal)
        if principal is None:
            self.become(conn, ANONYMOUS)
            conn.admitted_principal = conn.principal
            raise ProtocolError(
                ErrorCode.AUTH_REQUIRED,
                "The token this connection signed in with is no longer valid: sign in again",
                {"resources": [USERS_RESOURCE_METADATA]},
            )
        if principal is not conn.principal:
            self.become(conn, principal)
        return principal

    async def _read(self, principal: Principal) -> Principal | None:
        """The directory's answer for a principal's token, kept unless a `forget` came
        while it was read."""
        assert principal.token_id is not None
        epoch, read_at = self._epoch, time.monotonic()
        fresh = await self.directory.refresh(principal)
        if epoch == self._epoch:
            self._known[principal.token_id] = fresh
            self._read_at[principal.token_id] = read_at
        return fresh

    def forget(self, tokens: Iterable[int] | None) -> None:
        """What a principal is read from changed: the principals of these tokens (None: of
        every token) are read again, before the next command of any connection signed in with
        one, and now for the open ones, so that one whose grants shrank or whose token was
        revoked stops being told what it may no longer read without waiting for its next
        command."""
        self._epoch += 1
        if tokens is None:
            self._known.clear()
            self._read_at.clear()
        else:
            tokens = set(tokens)
            for token in tokens:
                self._known.pop(token, None)
                self._read_at.pop(token, None)
        held = [
            conn
            for conn in self._fanout.connections
            if conn.principal.token_id is not None
            and (tokens is None or conn.principal.token_id in tokens)
        ]
        if held:
            task = asyncio.get_running_loop().create_task(self._reread(held))
            self._rereads.add(task)
            task.add_done_callback(self._rereads.discard)

    async def _reread(self, conns: list[Connection]) -> None:
        """Read again the principals of open connections (once per token), and narrow what
        each watches. A connection whose token no longer signs in keeps its token but no
        grant until its next command, which is refused -32007 as `principal_now` refuses it."""
        by_token: dict[int, list[Connection]] = {}
        for conn in conns:
            if conn.principal.token_id is not None:
                by_token.setdefault(conn.principal.token_id, []).append(conn)
        for token, held in by_token.items():
            try:
                if token in self._known:
                    principal = self._known[token]
                else:
                    principal = await self._read(held[0].principal)
            except Exception:
                log.exception("reading the principal of token %s again failed", token)
                continue
            for conn in held:
                if conn.closed or conn.principal.token_id != token:
                    continue
                if principal is None:
                    self.become(conn, Principal(conn.principal.ref, (), token))
                elif principal is not conn.principal:
                    self.become(conn, principal)

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
