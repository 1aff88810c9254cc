"""The admin: people (with their memberships and tokens), tokens (minted here, their secret
shown once), teams, projects, roles, the sessions the engine keeps (read only) and root config.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import reverse
from django.utils.functional import lazy
from django.utils.html import format_html

from .api.people_views import ws_url
from .engine.clock import iso
from .models import (
    Membership,
    Project,
    Role,
    RootConfig,
    StoredChat,
    StoredSession,
    StoredTurn,
    Team,
    Token,
)
from .session_admin import LiveSessionAdmin
from .store import (
    keep_role,
    membership_change,
    memberships_of,
    mint_token,
    revoke_token,
    validate_grants,
)
from .store.acts import of_request

User = get_user_model()


def _sandbox_said() -> str:
    from .edge.runtime import sandbox_settings

    mode = sandbox_settings().mode
    if mode == "bwrap":
        return "Site administration · sandbox: bwrap (each person's processes in their own)"
    return "Site administration · sandbox: OFF (agents run as the server's own user)"


#: The index says where people's processes run, so an operator sees it where they work.
admin.site.index_title = lazy(_sandbox_said, str)()


@admin.register(RootConfig)
class RootConfigAdmin(admin.ModelAdmin):
    list_display = ("key", "updated_at")
    readonly_fields = ("updated_at",)


# -- people ----------------------------------------------------------------------------------


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ("role", "team", "project", "primary")


class TokenInline(admin.TabularInline):
    """A person's tokens: revoked here, minted on the token admin (the secret is shown there)."""

    model = Token
    extra = 0
    fields = ("name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("name", "prefix", "created_at", "last_used_at")
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class PersonAdmin(UserAdmin):
    """A person. Staff and superuser status are not ticked here: they follow the admin role,
    held through the memberships below, as they do through the REST API and `ahpd`."""

    inlines = (MembershipInline, TokenInline)
    readonly_fields = ("mint_link", "is_staff", "is_superuser")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        return [*fieldsets, ("Tokens", {"fields": ("mint_link",)})]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        before = memberships_of(form.instance) if change else []
        super().save_related(request, form, formsets, change)
        membership_change(form.instance, before, by=of_request(request, "admin"))

    @admin.display(description="new token")
    def mint_link(self, obj: Any) -> str:
        url = reverse("admin:hosts_token_add") + "?" + urlencode({"user": obj.pk})
        return format_html('<a href="{}">Mint a token for {}</a>', url, obj.get_username())


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
        return iso(chat.created_ms)

    @admin.display(description="turns")
    def turns(self, chat: StoredChat) -> str:
        url = reverse("admin:hosts_storedturn_changelist") + "?" + urlencode({"chat": chat.uri})
        return format_html('<a href="{}">{} turns</a>', url, chat.turn_rows.count())


@admin.register(StoredSession)
class StoredSessionAdmin(LiveSessionAdmin, ReadOnly, admin.ModelAdmin):
    list_display = ("uri", "title", "provider", "owner", "modified", "is_archived")
    list_filter = ("provider", "is_archived", "is_read")
    search_fields = ("uri", "title", "owner")
    inlines = (StoredChatInline,)
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
        return iso(session.created_ms)

    @admin.display(description="modified", ordering="modified_ms")
    def modified(self, session: StoredSession) -> str:
        return iso(session.modified_ms)


@admin.register(StoredTurn)
class StoredTurnAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("chat", "position", "turn_id", "state")
    list_select_related = ("chat",)
    search_fields = ("turn_id", "chat__uri")
    fields = ("chat", "position", "turn_id", "turn")
    readonly_fields = ("turn",)

    @admin.display(description="state")
    def state(self, turn: StoredTurn) -> str:
        return str(turn.data.get("state", "")) if isinstance(turn.data, dict) else ""

    @admin.display(description="turn")
    def turn(self, turn: StoredTurn) -> str:
        return format_html("<pre>{}</pre>", json.dumps(turn.data, indent=2, ensure_ascii=False))
