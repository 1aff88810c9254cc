"""The usage meter: the engine's port to usage records, policies and budgets (usage/).

The engine says what a turn is about to do and what it used; the meter writes it down,
charges its pools and its policy rows, and says when a policy refuses. Implemented over the
ORM in `usage.meter`; `NoMeter` (engine tests, benchmarks) records nothing and refuses
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .principal import Principal


@dataclass(frozen=True, slots=True)
class Work:
    """Who asks for what, where: the person (`user:<id>`, `root:<host>`), the session's scope
    (`team:<slug>`, `project:<slug>` or ""), the agent and the model a turn named."""

    person: str
    scope: str
    agent: str
    model: str | None = None
    #: A holder of `*:*` (step 1 of a check: allowed at once).
    admin: bool = False


@dataclass(frozen=True, slots=True)
class Admission:
    #: Why the work is refused (naming the policy row), or None.
    refusal: str | None = None
    #: The rows charged for it (their ids), in pay order.
    payers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Use:
    """What one turn (or one report of it) used."""

    work: Work
    session: str
    chat: str
    turn: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: US dollars the agent reported, or None (priced from AHPD_CONFIG, if it can be).
    cost_usd: float | None = None
    duration_ms: int = 0
    payers: tuple[str, ...] = ()


class Meter(Protocol):
    #: Whether a usage record is written per usage report (else one per turn).
    per_report: bool

    async def check_session(self, work: Work) -> str | None:
        """Why a session of this agent may not be made (naming the row), or None."""
        ...

    async def admit_turn(self, work: Work) -> Admission:
        """Check a turn and charge its start to the rows that pay, in one transaction."""
        ...

    async def record(self, use: Use) -> str | None:
        """Write a record and charge it; why its payers now have no room left, or None."""
        ...

    async def resource(
        self, principal: Principal, method: str, uri: str, data: Any = None, **options: Any
    ) -> dict[str, Any]:
        """A resource call on a `usage:` or `policy:` URI, answered in the protocol's shape."""
        ...


class NoMeter:
    """Nothing recorded, nothing refused, no `usage:` or `policy:` resource."""

    per_report = False

    async def check_session(self, work: Work) -> str | None:
        return None

    async def admit_turn(self, work: Work) -> Admission:
        return Admission()

    async def record(self, use: Use) -> str | None:
        return None

    async def resource(
        self, principal: Principal, method: str, uri: str, data: Any = None, **options: Any
    ) -> dict[str, Any]:
        from ..protocol.errors import ErrorCode, ProtocolError

        raise ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {uri}")


#: The schemes the meter serves over the resource family.
SCHEMES = ("usage", "policy")
