"""Who a connection is: a person (`user:<id>`) or the deployment itself (`root:<host>`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .grants import SCOPED_SUBJECTS, allows

#: The protected resource `authenticate` signs a person in against (RFC 9728's record).
USERS_RESOURCE = "ahpd://users"
USERS_RESOURCE_METADATA = {
    "resource": USERS_RESOURCE,
    "resource_name": "The people of this ahpd host",
    "bearer_methods_supported": ["header"],
    "required": False,
}

ANONYMOUS_REF = "anonymous"


#: The scope of what belongs to no team or project: the host's own.
HOST_SCOPE = ""


@dataclass(frozen=True, slots=True)
class Principal:
    #: `user:<id>` for a person, `root:<host>` for the deployment's connection token.
    ref: str
    #: What they hold host-wide: the roles of memberships in no team or project.
    grants: tuple[str, ...]
    #: The person's token, so a revocation is seen on the next command; None for root.
    token_id: int | None = None
    #: What they hold within a scope (`team:<slug>`, `project:<slug>`), through memberships
    #: there; a team's reach its projects too. Each scope they are a member of is a key.
    scoped: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)
    #: The scope their sessions are made in unless they name one: their primary membership's.
    home: str = HOST_SCOPE
    #: What `may` has answered: a principal's grants never change (a changed role is a new
    #: principal), and the fan-out asks once per watcher per envelope.
    _answers: dict[str, bool] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def may(self, needed: str) -> bool:
        """Whether they hold `needed` somewhere it can be used: host-wide, or, for what is done
        in sessions (grants.SCOPED_SUBJECTS), in any scope (access.py says in which session)."""
        answer = self._answers.get(needed)
        if answer is None:
            answer = allows(self.grants, needed) or (
                needed.partition(":")[0] in SCOPED_SUBJECTS
                and any(allows(held, needed) for held in self.scoped.values())
            )
            self._answers[needed] = answer
        return answer

    def may_in(self, scope: str, needed: str) -> bool:
        """Whether they hold `needed` for what is in `scope`: host-wide or through it."""
        key = f"{needed}@{scope}"
        answer = self._answers.get(key)
        if answer is None:
            held = self.scoped.get(scope, ()) if scope != HOST_SCOPE else ()
            answer = self._answers[key] = allows(self.grants, needed) or allows(held, needed)
        return answer

    def belongs(self, scope: str) -> bool:
        """Whether they are a member of `scope`; of the host's, by any host-wide role."""
        return bool(self.grants) if scope == HOST_SCOPE else scope in self.scoped

    @property
    def admin(self) -> bool:
        return "*:*" in self.grants


#: Who a connection is before its token or a sign-in says otherwise: nobody, with no grants.
ANONYMOUS = Principal(ANONYMOUS_REF, ())


def root(host_name: str) -> Principal:
    return Principal(ref=f"root:{host_name}", grants=("*:*",))


class Directory(Protocol):
    """The people a host knows, reached from the engine without Django."""

    async def principal_for_token(self, secret: str) -> Principal | None: ...

    async def refresh(self, principal: Principal) -> Principal | None: ...


class NoDirectory:
    """A host with nobody but the deployment (engine tests, benchmarks)."""

    async def principal_for_token(self, secret: str) -> Principal | None:
        return None

    async def refresh(self, principal: Principal) -> Principal | None:
        return principal
