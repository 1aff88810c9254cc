"""The audit trail as the engine sees it: the acts the engine itself makes on someone's say
(root config changed, another's session disposed, another's turn cancelled, an automation
run) are handed to one port. The Django side keeps them (audit/engine_trail.py, wired in
ahpsite/engine.py); the default keeps nothing, for engine tests and benchmarks.

Pure Python: no Django here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

#: Where an act came in: a client's socket, the REST API, the admin, `manage.py ahpd`, the
#: schedule (an automation's trigger), or the host itself (setup, tests).
INTERFACES = ("socket", "rest", "admin", "cli", "schedule", "system")


@dataclass(frozen=True, slots=True)
class Act:
    """One act: who (a principal's ref), what (`token.minted`...), on what (kind and id),
    from where (an interface of INTERFACES, and the peer's address where there is one)."""

    by: str
    act: str
    target_kind: str
    target_id: str
    via: str = "system"
    address: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    #: When it was made, where it is kept later than that (kept with a burst of others); None:
    #: when it is kept.
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks for a change (a principal's ref) and from where (INTERFACES, and the peer's
    address where there is one)."""

    ref: str
    via: str
    address: str = ""


#: The host itself (setup, fixtures): no one's say.
SYSTEM = Actor("system", "system")


class AuditTrail(Protocol):
    async def record(self, act: Act) -> None:
        """Keep the act (on the engine's own database executor, never a request's thread)."""
        ...

    async def record_many(self, acts: list[Act]) -> None:
        """Keep the acts, in their order, together (one insert for a burst of them)."""
        ...


class NoAuditTrail:
    """Keeps nothing: the engine without a database."""

    async def record(self, act: Act) -> None:
        return None

    async def record_many(self, acts: list[Act]) -> None:
        return None
