"""The engine's audit trail port over the ORM, on the engine's own database executor."""

from __future__ import annotations

from hosts.engine.audit_trail import Act
from hosts.store.engine_database import db_call

from .trail import record_act, record_acts


class DjangoAuditTrail:
    async def record(self, act: Act) -> None:
        await db_call(record_act)(act)

    async def record_many(self, acts: list[Act]) -> None:
        await db_call(record_acts)(acts)
