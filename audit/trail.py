"""Keeping the audit trail: the one function that writes a record, which the composition root
names to hosts (settings.AHPD_AUDIT_RECORDER, read by hosts/store/acts.py) and the engine's
port reaches (engine_trail.py)."""

from __future__ import annotations

from hosts.engine.audit_trail import Act

from .models import AuditRecord


def record_act(act: Act) -> AuditRecord:
    """Keep one act (in the caller's transaction, if it has one)."""
    return AuditRecord.objects.create(
        by=act.by,
        act=act.act,
        target_kind=act.target_kind,
        target_id=act.target_id,
        via=act.via,
        address=act.address,
        detail=act.detail,
    )
