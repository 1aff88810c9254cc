"""The admin: records (read only, filtered by person, team, project, agent, model and date),
each pool's days with a chart of its last 30, and the policy rows, checked as the scheme
checks them. Records and days export as CSV (hosts/admin_csv.py)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.safestring import mark_safe

from hosts.admin_csv import CsvExport
from hosts.store.acts import of_request, record

from .chart import last_30_days
from .decide import PolicyError, parse_row, row_json
from .models import Policy, UsageDay, UsageRecord
from .reading import periods


class ReadOnly(admin.ModelAdmin):  # type: ignore[type-arg]
    """What the meter writes: nobody adds, changes or deletes it here."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(UsageRecord)
class UsageRecordAdmin(CsvExport, ReadOnly):
    list_display = (
        "at",
        "user_pool",
        "team_pool",
        "project_pool",
        "agent",
        "model",
        "input_tokens",
        "output_tokens",
        "cost_usd",
    )
    list_filter = ("user_pool", "team_pool", "project_pool", "agent", "model", "day")
    date_hierarchy = "at"
    search_fields = ("session", "turn", "user_pool")
    actions = ("export_csv",)
    csv_fields = (
        "at",
        "day",
        "user_pool",
        "team_pool",
        "project_pool",
        "session",
        "chat",
        "turn",
        "agent",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "cost_from",
        "duration_ms",
    )


@admin.register(UsageDay)
class UsageDayAdmin(CsvExport, ReadOnly):
    """Each pool's days; with a pool chosen, a chart of its last 30 days above them."""

    list_display = ("pool", "day", "records", "input_tokens", "output_tokens", "cost_usd")
    list_filter = ("pool",)
    date_hierarchy = "day"
    change_list_template = "admin/usage/usageday/change_list.html"
    actions = ("export_csv",)
    csv_fields = (
        "pool",
        "day",
        "records",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "unpriced",
    )

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        pool = request.GET.get("pool__exact") or request.GET.get("pool")
        if not pool:
            pool = UsageDay.objects.order_by("-day", "pool").values_list("pool", flat=True).first()
        context = dict(extra_context or {})
        if pool:
            context["chart_pool"] = pool
            context["chart"] = mark_safe(last_30_days(pool, periods().today))  # noqa: S308
        return super().changelist_view(request, context)


class PolicyForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Policy
        fields = (
            "id",
            "scope",
            "kind",
            "effect",
            "match",
            "limits",
            "pool",
            "cap",
            "valid_from",
            "valid_until",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        body = {key: data.get(key) for key in ("scope", "kind", "effect", "match", "limits")}
        body.update(pool=data.get("pool") or "", cap=bool(data.get("cap")))
        for name, key in (("valid_from", "from"), ("valid_until", "until")):
            if data.get(name) is not None:
                body[key] = data[name].isoformat()
        try:
            row = parse_row(str(data.get("id") or self.instance.pk or ""), body)
        except PolicyError as exc:
            raise forms.ValidationError(str(exc)) from None
        data["match"] = row_json(row)["match"]
        data["limits"] = row_json(row)["limits"]
        return data


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = PolicyForm
    list_display = ("id", "scope", "kind", "effect", "valid_from", "valid_until")
    list_filter = ("kind", "effect")
    search_fields = ("id", "scope")

    # Each write on the audit trail, as the REST API's and the socket's (policy_rows.py).

    def save_model(self, request: HttpRequest, obj: Policy, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        record("policy.set", of_request(request, "admin"), "policy", obj.pk, made=not change)

    def delete_model(self, request: HttpRequest, obj: Policy) -> None:
        policy_id = obj.pk
        super().delete_model(request, obj)
        record("policy.removed", of_request(request, "admin"), "policy", policy_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Policy]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        super().delete_queryset(request, queryset)
        for policy_id in ids:
            record("policy.removed", of_request(request, "admin"), "policy", policy_id)
