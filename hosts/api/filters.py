"""What each list under /api/ may be narrowed to, by query parameters named in the API's
casing (camelCase): `?provider=local&isArchived=false`. A parameter not given narrows nothing;
a boolean is `true` or `false` and nothing else; a parameter a list does not take, or a value
its filter does not, is refused 400 naming it (query_parameters.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django_filters import rest_framework as filters

from ..models import Project, StoredSession, Token
from .query_parameters import TrueFalseFilter


class SessionFilter(filters.FilterSet):
    provider = filters.CharFilter(help_text="the agent's provider, e.g. local")
    owner = filters.CharFilter(help_text="whose the sessions are: user:<id>")
    isArchived = TrueFalseFilter(field_name="is_archived")  # noqa: N815 (the API's casing)
    isRead = TrueFalseFilter(field_name="is_read")  # noqa: N815

    class Meta:
        model = StoredSession
        fields = ["provider", "owner", "isArchived", "isRead"]


class PersonFilter(filters.FilterSet):
    role = filters.CharFilter(method="holding", help_text="who hold this role (its name)")
    team = filters.CharFilter(method="holding", help_text="who hold a role within this team")
    isActive = TrueFalseFilter(field_name="is_active")  # noqa: N815

    class Meta:
        model = get_user_model()
        fields = ["role", "team", "isActive"]

    def holding(self, people: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        """`role` and `team` together are one membership: the role held within the team, not
        a role held anywhere by someone with some role in the team."""
        asked = self.form.cleaned_data
        if name == "team" and asked.get("role"):
            return people  # taken with the role
        held = {
            "memberships__role__name": asked.get("role"),
            "memberships__team__slug": asked.get("team"),
        }
        return people.filter(**{lookup: v for lookup, v in held.items() if v}).distinct()


class TokenFilter(filters.FilterSet):
    # exclude: revoked=true drops the live (revoked_at null), revoked=false the revoked.
    revoked = TrueFalseFilter(
        field_name="revoked_at",
        lookup_expr="isnull",
        exclude=True,
        help_text="true: only revoked tokens; false: only live ones",
    )

    class Meta:
        model = Token
        fields = ["revoked"]


class ProjectFilter(filters.FilterSet):
    team = filters.CharFilter(field_name="team__slug", help_text="the team's slug")

    class Meta:
        model = Project
        fields = ["team"]
