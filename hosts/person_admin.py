"""The admin's person page, in ahpd's terms: who they are, the roles they hold (the
memberships below), their tokens, their sessions and what they used. Django's groups and
permission pickers mean nothing here and are not shown (nor is the Groups page): what a
person may do is their roles' grants, and admin-site rights follow the admin role
(store.sync_admin_site), so neither staff nor superuser status is ticked by hand."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Group
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from .admin_dates import local_ms
from .admin_usage import pool_usage, spent
from .models import Membership, StoredSession, Token
from .store import membership_change, memberships_of
from .store.acts import of_request

User = get_user_model()

#: How many of a person's sessions their page lists (the newest), with a link to all.
SESSIONS_SHOWN = 10


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


def ref_of(person: Any) -> str:
    """Who a person is in ahpd's words: `user:<id>`."""
    return f"user:{person.get_username()}"


def roles_of(person: Any) -> list[str]:
    """Each role a person holds and where: `admin`, `member in team core`."""
    held = []
    for membership in person.memberships.select_related("role", "team", "project"):
        where = membership.project or membership.team
        kind = "project" if membership.project else "team"
        primary = " (primary)" if membership.primary else ""
        role = str(membership.role)
        held.append(f"{role} in {kind} {where}{primary}" if where else f"{role}{primary}")
    return held


if admin.site.is_registered(User):
    admin.site.unregister(User)
# Groups are not how anyone is given anything here (roles are): not offered at all.
if admin.site.is_registered(Group):
    admin.site.unregister(Group)


@admin.register(User)
class PersonAdmin(UserAdmin):
    """A person. Staff and superuser status are not ticked here: they follow the admin role,
    held through the memberships below, as they do through the REST API and `ahpd`."""

    inlines = (MembershipInline, TokenInline)
    readonly_fields = ("mint_link", "is_staff", "roles", "site_rights", "sessions", "usage")
    list_display = ("username", "email", "roles", "is_active", "last_login")
    list_filter = ("is_active", "is_staff", "memberships__role", "memberships__team")
    filter_horizontal = ()
    fieldsets = (
        (None, {"fields": ("username", "password")}),
        ("Personal info", {"fields": ("first_name", "last_name", "email")}),
        ("In ahpd", {"fields": ("is_active", "roles", "site_rights")}),
        ("Sessions and usage", {"fields": ("sessions", "usage")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).prefetch_related("memberships__role")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        return [*fieldsets, ("Tokens", {"fields": ("mint_link",)})]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # One audit record of what the memberships were and became (it ends in
        # sync_admin_site, as every change of a person's memberships does).
        before = memberships_of(form.instance) if change else []
        super().save_related(request, form, formsets, change)
        membership_change(form.instance, before, by=of_request(request, "admin"))

    @admin.display(description="new token")
    def mint_link(self, obj: Any) -> str:
        url = reverse("admin:hosts_token_add") + "?" + urlencode({"user": obj.pk})
        return format_html('<a href="{}">Mint a token for {}</a>', url, obj.get_username())

    @admin.display(description="roles")
    def roles(self, obj: Any) -> str:
        """The roles held, changed in the memberships below."""
        return ", ".join(roles_of(obj)) or "none (they may do nothing)"

    @admin.display(description="admin site")
    def site_rights(self, obj: Any) -> str:
        if obj.is_staff:
            return "may sign in to this site (they hold the admin role)"
        return "may not sign in to this site (only a holder of the admin role may)"

    @admin.display(description="sessions")
    def sessions(self, obj: Any) -> str:
        """Their sessions, newest first, each a link to its live page."""
        if obj is None or obj.pk is None:
            return "-"
        owned = StoredSession.objects.filter(owner=ref_of(obj))
        count = owned.count()
        if not count:
            return "none"
        rows = format_html_join(
            "",
            '<li><a href="{}">{}</a> · {} · {}</li>',
            (
                (
                    reverse("admin:hosts_storedsession_change", args=[quote(s.uri)]),
                    s.title or s.uri,
                    s.provider,
                    local_ms(s.modified_ms),
                )
                for s in owned[:SESSIONS_SHOWN]
            ),
        )
        everything = (
            reverse("admin:hosts_storedsession_changelist")
            + "?"
            + urlencode({"owner": ref_of(obj)})
        )
        return format_html(
            '<ul class="ahpd-sessions">{}</ul><a href="{}">all {} sessions</a>',
            rows,
            everything,
            count,
        )

    @admin.display(description="usage")
    def usage(self, obj: Any) -> str:
        """What they used today, this week and this month (their own pool), with links to
        their usage records and days."""
        if obj is None or obj.pk is None:
            return "-"
        pool = ref_of(obj)
        figures = pool_usage(pool)
        records = (
            reverse("admin:usage_usagerecord_changelist")
            + "?"
            + urlencode({"user_pool__exact": pool})
        )
        days = reverse("admin:usage_usageday_changelist") + "?" + urlencode({"pool__exact": pool})
        return format_html(
            '<span class="ahpd-usage">today {} · this week {} · this month {}</span>'
            ' (<a href="{}">records</a>, <a href="{}">days</a>)',
            spent(figures["day"]),
            spent(figures["week"]),
            spent(figures["month"]),
            records,
            days,
        )
