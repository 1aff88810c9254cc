"""Whose session: who may read, work in and dispose a session, the one place it is decided.

A session is its owner's and belongs to a scope (`team:<slug>`, `project:<slug>`, or the
host's own, ""). Doing anything to it takes the operation's grant held host-wide or through a
membership of its scope (`chat:send`); and one who is not its owner needs more besides:

- reading it: to be a member of its scope, or `others:read` there;
- working in it (any other write): `others:work` there;
- disposing it or one of its chats: `others:dispose` there.

A terminal is judged the same way: as the session that claims it, or, claimed by none, as a
session of its opener's would be (`Personal`), except that being a member of its scope does not
let one read it.

The built-in member and guest roles hold no `others:*`; `lead` holds them all, and admin's
`*:*` every one. Socket actions (commands/dispatch.py), commands (services/), snapshots,
listings, notifications, replay and the REST views all ask here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..protocol.errors import ErrorCode, ProtocolError, invalid_params
from . import grants
from .principal import HOST_SCOPE, Principal


class Owned(Protocol):
    """A session as kept (the engine's record, or the store's row): whose, and where."""

    uri: str
    owner: str
    scope: str


OTHERS_READ = "others:read"
OTHERS_WORK = "others:work"
OTHERS_DISPOSE = "others:dispose"


@dataclass(slots=True)
class Personal:
    """What is one person's own rather than a session's: a terminal no session claims, judged
    as a session of `owner`'s in `scope` would be, but for reading. Another member of the scope
    reads it only with `others:read`: a shell's scrollback holds what its owner typed there (a
    password at a prompt that does not echo it included), which a session's turns do not."""

    uri: str
    owner: str
    scope: str


#: The operations that end a session, a chat or a terminal: one not the owner's needs
#: others:dispose.
DISPOSING = frozenset({"session:dispose", "chat:dispose", "terminal:dispose"})

#: What reading a session is (a snapshot of it or of its chats, a row in a listing).
READ_SESSION = "session:state"
#: What reading a terminal is (a snapshot of it, its row in root state's `terminals`).
READ_TERMINAL = "terminal:output"


def others_grant(needed: str) -> str:
    """What one who is not the owner also needs to do `needed` in a session."""
    if needed in DISPOSING:
        return OTHERS_DISPOSE
    subject, _, operation = needed.partition(":")
    group = grants.SUBJECTS.get(subject, ("", "", {}))[2].get(operation, operation)
    return OTHERS_READ if group == grants.READ else OTHERS_WORK


def refusal(principal: Principal, record: Owned, needed: str) -> str | None:
    """Why `principal` may not do `needed` in the session `record` keeps; None when they may.

    In the gate's words: `<who> may not <grant> here`, and whose session it is.
    """
    scope = record.scope
    if not principal.may_in(scope, needed):
        return f"{principal.ref} may not {needed} here"
    if record.owner == principal.ref:
        return None
    other = others_grant(needed)
    if other == OTHERS_READ and principal.belongs(scope) and not isinstance(record, Personal):
        return None
    if principal.may_in(scope, other):
        return None
    return f"{principal.ref} may not {other} here: {record.uri} is {record.owner or 'nobody'}'s"


def require(principal: Principal, record: Owned, needed: str) -> None:
    """-32009 with the refusal, unless `principal` may do `needed` in the session."""
    reason = refusal(principal, record, needed)
    if reason is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)


def may_read(principal: Principal, record: Owned) -> bool:
    return refusal(principal, record, READ_SESSION) is None


def creation_scope(principal: Principal, named: object, method: str) -> str:
    """The scope a new session of `principal`'s goes in: the one they named, if they are a
    member of it (an admin names any), else their home. -32602 naming what was wrong."""
    if named is None:
        return principal.home
    if not isinstance(named, str) or not (
        named == HOST_SCOPE or named.partition(":")[0] in ("team", "project")
    ):
        raise invalid_params(
            f'{method}: a scope is "team:<slug>", "project:<slug>" or "" (the host), not {named!r}'
        )
    if not (principal.belongs(named) or principal.admin):
        raise invalid_params(f"{method}: {principal.ref} is not a member of {named!r}")
    return named


class Readable:
    """What a principal may read, as a filter over stored rows (the REST listing's): every
    session (`everything`), or their own where they may read sessions at all (in any scope,
    or in `own_scopes`) and anyone's in `scopes`. The same answers as `may_read`."""

    def __init__(self, principal: Principal) -> None:
        self.owner = principal.ref
        self.everything = principal.may_in(HOST_SCOPE, READ_SESSION) and principal.may_in(
            HOST_SCOPE, OTHERS_READ
        )
        known = (HOST_SCOPE, *principal.scoped)
        self.own_anywhere = principal.may_in(HOST_SCOPE, READ_SESSION)
        self.own_scopes = frozenset(s for s in known if principal.may_in(s, READ_SESSION))
        self.scopes = frozenset(
            s for s in self.own_scopes if principal.belongs(s) or principal.may_in(s, OTHERS_READ)
        )
