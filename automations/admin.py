"""The admin's automation pages. An automation is made, changed and deleted through the
engine's services (calls.py) as the signed-in person, with their grants, so every client of
the catalogue is told, exactly as from the socket or REST; a refusal is said on the page and
nothing is kept. Runs are read-only, each with a link to its session's page and what its
sessions used, and export as CSV (hosts/admin_csv.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.options import csrf_protect_m
from django.contrib.admin.utils import quote
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from hosts.admin_csv import CsvExport
from hosts.admin_dates import local_ms
from hosts.admin_engine_calls import admin_does

from .models import Automation, AutomationRun
from .run_usage import described, usage_of_run

NOT_KEPT = "Not kept: "

EXAMPLE = {
    "title": "Nightly triage",
    "message": {"text": "Triage the issues opened today", "origin": {"kind": "automation"}},
    "session": {"workingDirectories": []},
    "enabled": True,
    "triggers": [
        {
            "id": "nightly",
            "kind": "schedule",
            "schedule": {"expression": "0 2 * * *", "timeZone": "Europe/Berlin"},
        }
    ],
}


class AutomationForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Automation
        fields = ["uri", "definition"]
        help_texts = {"uri": "ahp-automation:/<id>; left empty, one is made"}

    uri = forms.CharField(required=False, max_length=512)
    definition = forms.JSONField(
        initial=EXAMPLE,
        widget=forms.Textarea(attrs={"rows": 24, "cols": 100}),
        help_text="the protocol's AutomationDefinition",
    )


def _session_link(uri: str) -> str:
    return format_html(
        '<a href="{}">{}</a>', reverse("admin:hosts_storedsession_change", args=[quote(uri)]), uri
    )


class RunInline(admin.TabularInline):  # type: ignore[type-arg]
    model = AutomationRun
    extra = 0
    fields = ("uri", "origin_kind", "scheduled_for", "status", "session")
    readonly_fields = fields
    ordering = ("-created_ms",)
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="session")
    def session(self, run: AutomationRun) -> str:
        return _session_link(run.primary_session) if run.primary_session else "-"


@admin.register(Automation)
class AutomationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = AutomationForm
    list_display = ("uri", "title", "owner", "enabled", "next_run_at", "run_count")
    search_fields = ("uri", "title", "owner")
    inlines = (RunInline,)

    # The engine writes the row, on its own thread and connection: the admin's transaction
    # around the form would hold that write back (SQLite) or hide it (PostgreSQL).
    @csrf_protect_m
    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return self._changeform_view(request, object_id, form_url, extra_context)

    @csrf_protect_m
    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return self._delete_view(request, object_id, extra_context)

    def get_inlines(self, request: HttpRequest, obj: Any = None) -> tuple[Any, ...]:
        return self.inlines if obj is not None else ()

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        shown = ("owner", "next_run_at", "run_count")
        return ("uri", *shown) if obj is not None else shown

    @admin.display(boolean=True)
    def enabled(self, row: Automation) -> bool:
        return bool(row.definition.get("enabled"))

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        definition = json.loads(json.dumps(form.cleaned_data["definition"]))
        if change:
            answer = admin_does(
                request, "update_automation", refused=NOT_KEPT, uri=obj.uri, changes=definition
            )
            obj.kept = answer is not None
            return
        uri = form.cleaned_data.get("uri") or None
        entry = admin_does(
            request, "create_automation", refused=NOT_KEPT, definition=definition, uri=uri
        )
        obj.uri = entry["resource"] if entry else ""
        obj.kept = bool(obj.uri) and Automation.objects.filter(uri=obj.uri).exists()

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> Any:
        if not obj.kept:
            return HttpResponseRedirect(request.path)  # the refusal is on the page
        return super().response_add(request, obj, post_url_continue)

    def response_change(self, request: HttpRequest, obj: Any) -> Any:
        if not obj.kept:
            return HttpResponseRedirect(request.path)  # the refusal is on the page
        return super().response_change(request, obj)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None  # runs are the engine's; nothing of them is edited here

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> list[dict[str, Any]]:
        # Of the definition alone: the runs' formset saved nothing (save_related), so it has
        # no new, changed or deleted objects to name (Django's own would fail on them, 500).
        return super().construct_change_message(request, form, [], add)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        admin_does(request, "remove_automation", refused="Not removed: ", uri=obj.uri)


@admin.register(AutomationRun)
class AutomationRunAdmin(CsvExport, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "uri",
        "automation",
        "origin_kind",
        "created",
        "scheduled_for",
        "status",
        "session",
    )
    list_filter = ("status", "origin_kind")
    search_fields = ("uri", "automation__uri", "owner")
    actions = ("export_csv",)
    csv_fields = (
        "uri",
        "automation",
        "owner",
        "origin_kind",
        "trigger_id",
        "created",
        "scheduled_for",
        "catch_up",
        "status",
        "primary_session",
        "sessions",
    )
    fields = (
        "uri",
        "automation",
        "owner",
        "origin_kind",
        "trigger_id",
        "scheduled_for",
        "catch_up",
        "request_id",
        "status",
        "lifecycle",
        "sessions_linked",
        "usage",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="session")
    def session(self, run: AutomationRun) -> str:
        return _session_link(run.primary_session) if run.primary_session else "-"

    @admin.display(description="created", ordering="created_ms")
    def created(self, run: AutomationRun) -> str:
        return local_ms(run.created_ms)

    def csv_created(self, run: AutomationRun) -> datetime:
        return datetime.fromtimestamp(run.created_ms / 1000, UTC)

    def csv_sessions(self, run: AutomationRun) -> str:
        return " ".join(run.sessions)

    @admin.display(description="sessions")
    def sessions_linked(self, run: AutomationRun) -> str:
        return format_html_join(", ", "{}", ((_session_link(uri),) for uri in run.sessions)) or "-"

    @admin.display(description="usage")
    def usage(self, run: AutomationRun) -> str:
        """What its sessions used (run_usage.py), read when the page is."""
        return described(usage_of_run(run))
