"""The audit trail: one record per act that changes who may do what or what the host does on
someone's say. Append-only: a record is made once and never changed or removed through the
product (the model refuses both; the admin and the REST API only read)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from hosts.engine.audit_trail import INTERFACES

#: The acts kept, and what each means.
ACTS = {
    "token.minted": "a token minted",
    "token.revoked": "a token revoked",
    "role.changed": "a role made, changed or removed",
    "membership.changed": "a person's memberships changed",
    "policy.set": "a policy row made or changed",
    "policy.removed": "a policy row removed",
    "rootConfig.changed": "the root config changed",
    "session.disposed": "someone else's session disposed",
    "turn.cancelled": "someone else's turn cancelled",
    "automation.ran": "an automation run",
    "mcpServer.set": "an MCP server made or changed",
    "mcpServer.removed": "an MCP server removed",
}


class AppendOnly(Exception):
    """An audit record cannot be changed or removed."""


class AuditQuerySet(models.QuerySet["AuditRecord"]):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly("audit records are never changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit records are never removed")


class AuditRecord(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    #: Who: the principal's ref (`user:<id>`, `root:<host>`, `os:<login>` for the CLI).
    by = models.CharField(max_length=200, db_index=True)
    act = models.CharField(max_length=40, choices=sorted(ACTS.items()), db_index=True)
    target_kind = models.CharField(max_length=40)
    target_id = models.CharField(max_length=500)
    via = models.CharField(
        max_length=20, choices=[(i, i) for i in INTERFACES], db_index=True, verbose_name="from"
    )
    address = models.CharField(max_length=100, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ("-at", "-pk")
        verbose_name = "audit record"

    def __str__(self) -> str:
        return (
            f"{self.at:%Y-%m-%d %H:%M:%S} {self.by} {self.act} {self.target_kind}:{self.target_id}"
        )

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("audit records are never changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit records are never removed")
