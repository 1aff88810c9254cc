"""What the audit trail may be narrowed to: the same filters for the REST API (query
parameters, the API's casing) and `manage.py ahpd audit` (options)."""

from __future__ import annotations

from typing import Any

from django_filters import rest_framework as filters

from hosts.engine.audit_trail import INTERFACES

from .models import ACTS, AuditRecord


class AuditFilter(filters.FilterSet):
    act = filters.ChoiceFilter(choices=sorted(ACTS.items()), help_text="the act, e.g. token.minted")
    by = filters.CharFilter(help_text="who: a principal's ref, e.g. user:alice")
    via = filters.ChoiceFilter(
        choices=[(i, i) for i in INTERFACES], help_text="where it came in: " + ", ".join(INTERFACES)
    )
    targetKind = filters.CharFilter(field_name="target_kind")  # noqa: N815 (the API's casing)
    targetId = filters.CharFilter(field_name="target_id")  # noqa: N815
    since = filters.IsoDateTimeFilter(field_name="at", lookup_expr="gte", help_text="ISO 8601")
    until = filters.IsoDateTimeFilter(field_name="at", lookup_expr="lt", help_text="ISO 8601")

    class Meta:
        model = AuditRecord
        fields = ["act", "by", "via", "targetKind", "targetId", "since", "until"]


def record_json(record: AuditRecord) -> dict[str, Any]:
    return {
        "id": record.pk,
        "at": record.at.isoformat(),
        "by": record.by,
        "act": record.act,
        "targetKind": record.target_kind,
        "targetId": record.target_id,
        "via": record.via,
        "address": record.address,
        "detail": record.detail,
    }
