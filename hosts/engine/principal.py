"""Who a connection is: a person (`user:<id>`) or the deployment itself (`root:<host>`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .grants import allows

#: The protected resource `authenticate` signs a person in against (RFC 9728's record).
USERS_RESOURCE = "ahpd://users"
USERS_RESOURCE_METADATA = {
    "resource": USERS_RESOURCE,
    "resource_name": "The people of this ahpd host",
    "bearer_methods_supported": ["header"],
    "required": False,
}

ANONYMOUS_REF = "anonymous"


@dataclass(frozen=True, slots=True)
class Principal:
    #: `user:<id>` for a person, `root:<host>` for the deployment's connection token.
    ref: str
    grants: tuple[str, ...]
    #: The person's token, so a revocation is seen on the next command; None for root.
    token_id: int | None = None
    #: What `may` has answered: a principal's grants never change (a changed role is a new
    #: principal), and the fan-out asks once per watcher per envelope.
    _answers: dict[str, bool] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def may(self, needed: str) -> bool:
        answer = self._answers.get(needed)
        if answer is None:
            answer = self._answers[needed] = allows(self.grants, needed)
        return answer

    @property
    def admin(self) -> bool:
        return "*:*" in self.grants


#: Who a connection is before the door or a sign-in says otherwise: nobody, with no grants.
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
