"""The admin's MCP server pages: the registry's rows, each checked and kept by registry.py (the
one check and the audit trail the REST API's writes go through too). A secret is never on a
page: the form shows each env and header key whose value is set as `<set>`, and leaving
`<set>` keeps the value kept; a new value replaces it, a key taken out removes it. The
operator's AHPD_CONFIG servers are the file's, listed on the changelist's help, not here."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from hosts.store.acts import of_request

from . import registry
from .models import McpServer

SECRET_HELP = (
    '{"NAME": "value"}. A value kept is shown as "<set>", never itself: leave "<set>" to keep '
    "it, write a new value to replace it, take the key out to remove it."
)


class McpServerForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = McpServer
        fields = [
            "name",
            "transport",
            "command",
            "args",
            "cwd",
            "env",
            "url",
            "headers",
            "description",
            "enabled",
            "host_wide",
            "offered_to",
        ]

    args = forms.JSONField(
        required=False, initial=list, help_text='stdio: a list of strings, ["--root", "/srv"]'
    )
    env = forms.JSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="stdio: the environment it runs with. " + SECRET_HELP,
    )
    headers = forms.JSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="http: the headers of each request. " + SECRET_HELP,
    )
    offered_to = forms.JSONField(
        required=False,
        initial=list,
        help_text='beside host-wide: ["team:core", "project:web", "user:ana"] (a project\'s '
        "sessions are offered what its team is)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The form is drawn from its initial values: the secrets' are `<set>`, never theirs.
        for field in registry.SECRETS:
            self.initial[field] = registry.hidden(getattr(self.instance, field) or {})
        self.checked: dict[str, Any] = {}

    def full_clean(self) -> None:
        super().full_clean()
        if self.is_bound and self._errors:
            # A refused form is drawn again from what was sent: its secrets `<set>` there too.
            data = self.data.copy()
            for field in registry.SECRETS:
                try:
                    sent = json.loads(data.get(field) or "{}")
                except ValueError:
                    sent = None
                data[field] = json.dumps(registry.hidden(sent) if isinstance(sent, dict) else {})
            self.data = data

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        body = {field: data.get(registry.COLUMN.get(field, field)) for field in registry.FIELDS}
        for field, empty in (("args", []), ("env", {}), ("headers", {}), ("offeredTo", [])):
            body[field] = empty if body[field] is None else body[field]
            data[registry.COLUMN.get(field, field)] = body[field]
        stored = McpServer.objects.filter(pk=self.instance.pk).first() if self.instance.pk else None
        try:
            self.checked = registry.checked(body, stored)
            data.update(self.checked)
        except registry.Invalid as exc:
            for field, said in exc.problems.items():
                self.add_error(registry.COLUMN.get(field, field), said)
        except registry.NameTaken as exc:
            self.add_error("name", str(exc))
        return data


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = McpServerForm
    list_display = ("name", "transport", "enabled", "host_wide", "offered", "description")
    list_filter = ("transport", "enabled", "host_wide")
    search_fields = ("name", "description", "command", "url")
    fieldsets = (
        (None, {"fields": ("name", "description", "enabled", "transport")}),
        ("stdio", {"fields": ("command", "args", "cwd", "env")}),
        ("http", {"fields": ("url", "headers")}),
        ("Offered to", {"fields": ("host_wide", "offered_to")}),
    )

    @admin.display(description="offered to")
    def offered(self, row: McpServer) -> str:
        return ", ".join(["everyone"] * row.host_wide + list(row.offered_to)) or "nobody"

    # Every write through the registry: its one check, the audit trail, no secret shown.

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        registry.keep(obj, form.checked, by=of_request(request, "admin"))

    def delete_model(self, request: HttpRequest, obj: McpServer) -> None:
        registry.remove(obj.name, by=of_request(request, "admin"))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for name in list(queryset.values_list("name", flat=True)):
            registry.remove(name, by=of_request(request, "admin"))
