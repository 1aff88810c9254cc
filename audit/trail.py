"""Keeping the audit trail: the one function that writes a record, which the composition root
names to hosts (settings.AHPD_AUDIT_RECORDER, read by hosts/store/acts.py) and the engine's
port reaches (engine_trail.py)."""

from __future__ import annotations

from hosts.engine.audit_trail import Act

from .models import AuditRecord


def _row(act: Act) -> AuditRecord:
    return AuditRecord(
        by=act.by,
        act=act.act,
        target_kind=act.target_kind,
        target_id=act.target_id,
        via=act.via,
        address=act.address,
        detail=act.detail,
        **({"at": act.at} if act.at is not None else {}),
    )


def record_act(act: Act) -> AuditRecord:
    """Keep one act (in the caller's transaction, if it has one)."""
    row = _row(act)
    row.save(force_insert=True)
    return row


def record_acts(acts: list[Act]) -> None:
    """Keep acts in their order, in one insert (a burst the engine kept together)."""
    AuditRecord.objects.bulk_create([_row(act) for act in acts])
