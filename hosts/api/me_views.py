"""/api/me/: who asks, and their own tokens. Any signed-in person may use it for themselves,
with no user:* grant: read who they are, list, mint and revoke their own tokens, and nobody
else's (another's token is not found here, whatever its name). The deployment's token (root)
is not a person, and is told so."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .auth import ApiUser
from .people_views import TokenItem, TokenListing
from .permissions import SIGNED_IN
from .serializers import MembershipSerializer

User = get_user_model()

#: What a person's principal says before their id.
PERSON = "user:"


class NotAPerson(exceptions.PermissionDenied):
    default_code = "not_a_person"


def me(request: Request) -> Any:
    """The person who asks, as a Django user; NotAPerson for the deployment's own token."""
    user = request.user
    assert isinstance(user, ApiUser)  # HoldsGrant let only a signed-in principal through
    ref = user.principal.ref
    if not ref.startswith(PERSON):
        raise NotAPerson(
            f"{ref} is the deployment's own token, not a person: /api/me/ is a person's own "
            "(root reads anyone's under /api/people/)"
        )
    person = User.objects.filter(username=ref.removeprefix(PERSON)).first()
    if person is None:  # removed since the request was signed in
        raise exceptions.NotFound(f"{ref} is no longer a person here")
    return person


class MeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.CharField(help_text="your id: you are user:<id>")
    principal = serializers.CharField(help_text="user:<id>, as the socket says you")
    roles = serializers.ListField(
        child=serializers.SlugField(), help_text="your host-wide roles, by name"
    )
    memberships = MembershipSerializer(many=True, help_text="every role you hold, and where")
    grants = serializers.ListField(
        child=serializers.CharField(), help_text="what you may do host-wide: those roles' grants"
    )
    scoped = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="what you may do within each team or project you are a member of "
        "(team:<slug>, project:<slug>): its sessions and the work in them",
    )
    home = serializers.CharField(
        allow_blank=True,
        help_text='where your sessions are made unless you name a scope ("" the host\'s own)',
    )
    isAdmin = serializers.BooleanField(  # noqa: N815 (the API's casing)
        help_text="you hold the admin role host-wide, so may use the admin site (/admin/) "
        "with every right"
    )


class MeView(APIView):
    """Who you are: your id, roles, grants and whether you are an admin."""

    grants = {"GET": SIGNED_IN}

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        person = me(request)
        assert isinstance(request.user, ApiUser)
        principal = request.user.principal
        memberships = list(person.memberships.select_related("role", "team", "project"))
        data = {
            "id": person.username,
            "principal": principal.ref,
            "roles": sorted(
                {m.role.name for m in memberships if m.team_id is None and m.project_id is None}
            ),
            "memberships": memberships,
            "grants": list(principal.grants),
            "scoped": {scope: list(held) for scope, held in principal.scoped.items()},
            "home": principal.home,
            "isAdmin": person.is_superuser,
        }
        return Response(MeSerializer(data).data)


class MyTokensView(TokenListing):
    """Your tokens (never their secrets), or a new one for you, whose secret is said once."""

    grants = {"GET": SIGNED_IN, "POST": SIGNED_IN}
    item_route = "api:my-token"

    def person(self) -> Any:
        return me(self.request)


class MyTokenView(TokenItem):
    """One of your tokens, by name; DELETE revokes it. Another's token is not found here."""

    grants = {"GET": SIGNED_IN, "DELETE": SIGNED_IN}

    def person_filter(self) -> dict[str, Any]:
        return {"user": me(self.request)}
