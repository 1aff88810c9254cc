"""The admin: people (person_admin.py: their roles, memberships, tokens, sessions and usage),
tokens (minted here, their secret shown once), teams, projects, roles, the sessions the engine
keeps (read only, each with its live page, session_admin.py), what runs now across every
session (running_admin.py), the turns, and root config. The site says ahpd, its "View site"
is the API's documentation, and its dates are in the admin user's zone (admin_dates.py).
"""

from __future__ import annotations

import json
from datetime import UTC, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet, TextField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.html import format_html

from .admin_dates import local_iso, local_ms
from .admin_usage import spent, turns_usage
from .api.people_views import ws_url
from .models import (
    Node,
    Project,
    Role,
    RootConfig,
    StoredChat,
    StoredSession,
    StoredTurn,
    Team,
    Token,
)

# The person admin registers itself as the user model's page (imported for that too).
from .person_admin import User
from .running_admin import RunningNowAdmin
from .session_admin import LiveSessionAdmin
from .store import keep_role, mint_token, revoke_token, validate_grants
from .store.acts import of_request


def _sandbox_said() -> str:
    from .edge.runtime import sandbox_settings

    mode = sandbox_settings().mode
    if mode == "bwrap":
        return "Site administration · sandbox: bwrap (each person's processes in their own)"
    return "Site administration · sandbox: OFF (agents run as the server's own user)"


#: The index says where people's processes run, so an operator sees it where they work.
admin.site.index_title = lazy(_sandbox_said, str)()
admin.site.site_header = "ahpd"
admin.site.site_title = "ahpd admin"
#: "View site": the API's documentation (served to anyone), not the socket's address, which
#: answers a browser 401.
admin.site.site_url = "/api/docs/"


@admin.register(RootConfig)
class RootConfigAdmin(admin.ModelAdmin):
    list_display = ("key", "updated_at")
    readonly_fields = ("updated_at",)


# -- tokens ----------------------------------------------------------------------------------


MINTED_PAGE = """{% extends "admin/base_site.html" %}
{% block content %}
<div id="content-main">
  <p>The token <strong>{{ token.name }}</strong> of <strong>{{ token.user }}</strong> was minted.
  Copy its secret now: only its hash is kept, and it will not be shown again.</p>
  <p><label for="ahpd-secret">Secret</label><br>
  <input id="ahpd-secret" type="text" readonly size="70" value="{{ secret }}"></p>
  <p><label for="ahpd-url">WebSocket URL</label><br>
  <input id="ahpd-url" type="text" readonly size="90" value="{{ url }}"></p>
  <p><a href="{{ changelist }}">Back to the tokens</a></p>
</div>
{% endblock %}
"""


class MintTokenForm(forms.ModelForm):
    """A new token: whose and what for. The secret is made by store.mint_token."""

    class Meta:
        model = Token
        fields = ("user", "name")


@admin.register(Token)
class TokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    list_select_related = ("user",)
    search_fields = ("name", "prefix", "user__username")
    actions = ("revoke",)

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = MintTokenForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("user", "name")
        return ("user", "name", "prefix", "created_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ()
        return ("user", "name", "prefix", "created_at", "last_used_at")

    def save_model(self, request: HttpRequest, obj: Token, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        minted = mint_token(obj.user.get_username(), obj.name, by=of_request(request, "admin"))
        for field in ("pk", "digest", "prefix", "created_at"):
            setattr(obj, field, getattr(minted.token, field))
        obj._state.adding = False
        obj._state.db = minted.token._state.db
        obj._minted_secret = minted.secret  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: Token, post_url_continue: Any = None) -> Any:
        secret = getattr(obj, "_minted_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": "Token minted",
            "opts": self.opts,
            "token": obj,
            "secret": secret,
            "url": ws_url(secret),
            "changelist": reverse("admin:hosts_token_changelist"),
        }
        page = engines["django"].from_string(MINTED_PAGE).render(context, request)
        response = HttpResponse(page)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[Token]) -> None:
        live = list(queryset.filter(revoked_at__isnull=True).select_related("user"))
        for token in live:
            revoke_token(token, by=of_request(request, "admin"))
        self.message_user(request, f"{len(live)} token(s) revoked.", messages.SUCCESS)


# -- teams, projects, roles ------------------------------------------------------------------


class ProjectInline(admin.TabularInline):
    model = Project
    extra = 0
    fields = ("slug", "name")


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("slug", "name")
    search_fields = ("slug", "name")
    inlines = (ProjectInline,)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "team")
    list_filter = ("team",)
    list_select_related = ("team",)
    search_fields = ("slug", "name", "team__slug")


class RoleForm(forms.ModelForm):
    """A role's grants as a JSON list of `<subject>:<operation>`, each one checked."""

    class Meta:
        model = Role
        fields = ("name", "grants")
        help_texts = {"grants": 'A JSON list, e.g. ["session:read", "chat:send"].'}

    def clean_grants(self) -> list[str]:
        grants = self.cleaned_data.get("grants")
        if not isinstance(grants, list) or not all(isinstance(g, str) for g in grants):
            raise forms.ValidationError("a JSON list of grants (strings)")
        return validate_grants(grants)


@admin.register(Role)
class RoleAdmin(admin.ModelAdmin):
    """The built-in roles are kept in step by the host: neither changed nor removed here."""

    form = RoleForm
    list_display = ("name", "builtin", "grant_list")

    @admin.display(description="grants")
    def grant_list(self, role: Role) -> str:
        return ", ".join(role.grants)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and obj.builtin:
            return ("name", "grants", "builtin")
        return ("builtin",)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.builtin:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: Role, form: Any, change: bool) -> None:
        keep_role(obj, by=of_request(request, "admin"))

    def delete_model(self, request: HttpRequest, obj: Role) -> None:
        keep_role(obj, by=of_request(request, "admin"), removed=True)

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # it would take the built-in roles too
        return actions


# -- sessions (read only: the engine writes them) --------------------------------------------


class ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class StoredChatInline(ReadOnly, admin.TabularInline):
    model = StoredChat
    extra = 0
    fields = ("uri", "title", "created", "backend_id", "is_read", "is_archived", "turns")
    readonly_fields = fields

    @admin.display(description="created")
    def created(self, chat: StoredChat) -> str:
        return local_ms(chat.created_ms)

    @admin.display(description="turns")
    def turns(self, chat: StoredChat) -> str:
        url = reverse("admin:hosts_storedturn_changelist") + "?" + urlencode({"chat": chat.uri})
        return format_html('<a href="{}">{} turns</a>', url, chat.turn_rows.count())


@admin.register(StoredSession)
class StoredSessionAdmin(RunningNowAdmin, LiveSessionAdmin, ReadOnly, admin.ModelAdmin):
    list_display = ("uri", "title", "provider", "owner", "modified", "is_archived")
    list_filter = ("provider", "is_archived", "is_read")
    search_fields = ("uri", "title", "owner")
    inlines = (StoredChatInline,)
    change_list_template = "admin/hosts/storedsession/change_list.html"
    fields = (
        "uri",
        "title",
        "provider",
        "owner",
        "created",
        "modified",
        "default_chat",
        "working_directories",
        "config",
        "chats",
        "is_read",
        "is_archived",
        "announced",
        "running",
    )
    readonly_fields = ("created", "modified", "running")

    @admin.display(description="created", ordering="created_ms")
    def created(self, session: StoredSession) -> str:
        return local_ms(session.created_ms)

    @admin.display(description="modified", ordering="modified_ms")
    def modified(self, session: StoredSession) -> str:
        return local_ms(session.modified_ms)


# -- turns: who sent each, when, for how long, at what cost ----------------------------------

#: A turn's fields inside its stored JSON (the protocol's Turn), read by the database as text
#: (cast: compared bare, SQLite would read the value compared with as JSON).
STARTED = Cast(KT("data__startedAt"), TextField())
SENDER = Cast(KT("data__message___meta__ahpd.sender"), TextField())


class TurnStarted(admin.SimpleListFilter):
    """Turns by the day they started, in the admin user's zone."""

    title = "started"
    parameter_name = "started"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("today", "Today"), ("7d", "Past 7 days"), ("30d", "Past 30 days")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        days = {"today": 0, "7d": 6, "30d": 29}.get(self.value() or "")
        if days is None:
            return queryset
        first = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
        first -= timedelta(days=days)
        # startedAt is UTC ISO 8601 with a Z: as text, it sorts as the times do.
        since = first.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        return queryset.filter(started__gte=since)


class TurnSender(admin.SimpleListFilter):
    """Turns by who sent them: each person, and the deployment's token."""

    title = "sent by"
    parameter_name = "sender"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        people = [
            f"user:{name}"
            for name in User.objects.order_by("username").values_list("username", flat=True)[:200]
        ]
        roots = sorted(
            set(
                StoredSession.objects.filter(owner__startswith="root:").values_list(
                    "owner", flat=True
                )
            )
        )
        return [(ref, ref) for ref in [*roots, *people]]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if not self.value():
            return queryset
        return queryset.filter(sender=self.value())


class TurnAgent(admin.AllValuesFieldListFilter):
    """Turns by the agent their session runs (its provider)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.title = "agent"


class TurnList(ChangeList):
    """The Turns list, each row told its usage (one query for the page's turns)."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        used = turns_usage(turn.turn_id for turn in self.result_list)
        for turn in self.result_list:
            turn.used = used.get(turn.turn_id)  # type: ignore[attr-defined]


@admin.register(StoredTurn)
class StoredTurnAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("turn_id", "session", "sender", "started", "duration", "cost", "state")
    list_filter = (
        ("chat__session__provider", TurnAgent),
        TurnSender,
        TurnStarted,
    )
    list_select_related = ("chat", "chat__session")
    search_fields = ("turn_id", "chat__uri", "chat__session__uri")
    fields = ("chat", "session", "position", "turn_id", "sender", "started", "duration", "turn")
    readonly_fields = ("session", "sender", "started", "duration", "turn")

    def get_ordering(self, request: HttpRequest) -> tuple[str, ...]:
        return ("-started", "-pk")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # Annotated before the ordering is applied: the list is ordered by when turns started.
        turns = StoredTurn.objects.annotate(started=STARTED, sender=SENDER)
        return turns.order_by(*self.get_ordering(request))

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return TurnList

    @admin.display(description="session", ordering="chat__session")
    def session(self, turn: StoredTurn) -> str:
        session = turn.chat.session
        url = reverse("admin:hosts_storedsession_change", args=[quote(session.pk)])
        return format_html('<a href="{}">{}</a>', url, session.title or session.pk)

    @admin.display(description="sent by", ordering="sender")
    def sender(self, turn: StoredTurn) -> str:
        return getattr(turn, "sender", None) or "-"

    @admin.display(description="started", ordering="started")
    def started(self, turn: StoredTurn) -> str:
        return local_iso(getattr(turn, "started", None))

    @admin.display(description="duration")
    def duration(self, turn: StoredTurn) -> str:
        ms = turn.data.get("duration") if isinstance(turn.data, dict) else None
        if not isinstance(ms, int | float) or isinstance(ms, bool):
            return "-"
        return f"{ms / 1000:.1f} s"

    @admin.display(description="cost")
    def cost(self, turn: StoredTurn) -> str:
        used = getattr(turn, "used", None)
        if used is None and not hasattr(turn, "used"):
            used = turns_usage([turn.turn_id]).get(turn.turn_id)
        return spent(used)

    @admin.display(description="state")
    def state(self, turn: StoredTurn) -> str:
        return str(turn.data.get("state", "")) if isinstance(turn.data, dict) else ""

    @admin.display(description="turn")
    def turn(self, turn: StoredTurn) -> str:
        return format_html("<pre>{}</pre>", json.dumps(turn.data, indent=2, ensure_ascii=False))


# -- nodes (read only: each serve claims, renews and lets go its own) --------------------------


@admin.register(Node)
class NodeAdmin(ReadOnly, admin.ModelAdmin):
    """The host's nodes whose lease holds: a node gone (killed, its machine lost) is not
    listed once its lease lapses, and one that stopped is gone at once."""

    list_display = (
        "node_id",
        "address",
        "machine",
        "pid",
        "runs",
        "agents_at_most",
        "started_at",
        "lease_until",
    )
    fields = (
        "node_id",
        "address",
        "machine",
        "pid",
        "folders",
        "agents",
        "agents_at_most",
        "version",
        "started_at",
        "renewed_at",
        "lease_until",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(lease_until__gte=timezone.now())

    @admin.display(description="agents at most")
    def agents_at_most(self, node: Node) -> str:
        return str(node.agents_max) if node.agents_max else "no limit"

    @admin.display(description="runs")
    def runs(self, node: Node) -> str:
        return ", ".join(node.agents) or "no agent"
