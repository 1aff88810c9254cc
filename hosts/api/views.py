"""The API's views. Each names, per method, the grant it needs (see permissions.HoldsGrant)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.cache import patch_cache_control
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
)
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..edge.addresses import public_base, with_token
from ..models import Project, Role, RootConfig, StoredSession, Team, Token
from ..store import mint_token
from .auth import ApiUser, host_name
from .metrics import read_figures
from .permissions import SIGNED_IN
from .serializers import (
    MintedTokenSerializer,
    MintTokenSerializer,
    PersonSerializer,
    ProjectSerializer,
    RoleSerializer,
    RootConfigSerializer,
    StatusSerializer,
    TeamSerializer,
    TokenSerializer,
)

User = get_user_model()

#: The methods a resource with an id answers: PATCH changes it; there is no PUT.
ONE = ["get", "patch", "delete", "head", "options"]


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with what the host keeps."
    default_code = "conflict"


# -- status ----------------------------------------------------------------------------------


class StatusView(APIView):
    """The host now: its name, version and uptime, what it keeps, who is connected and
    watching, the turns running and what turns came to (the figures /metrics says); who asks.
    Any signed-in principal reads it: host-wide counts, nobody's sessions."""

    grants = {"GET": SIGNED_IN}

    @extend_schema(responses=StatusSerializer)
    def get(self, request: Request) -> Response:
        principal = request.user.principal if isinstance(request.user, ApiUser) else None
        assert principal is not None
        data = {
            "host": host_name(),
            **read_figures().to_json(),
            "sessions": StoredSession.objects.count(),
            "people": User.objects.count(),
            "principal": principal.ref,
            "grants": list(principal.grants),
        }
        return Response(StatusSerializer(data).data)


# -- resources kept under a key --------------------------------------------------------------
#
# People, teams, projects and roles are each kept under a key: a person's id, a slug, a role's
# name. A Listing lists them in the order of that key and adds one; an Item reads, changes or
# removes one by it. Each method needs the subject's grant for it: <subject>:read, create,
# update or remove. A resource's own class (People, Teams, ...) names its subject, serializer,
# rows and key once, for both of its views.
#
# None of these classes has a docstring: drf-spectacular describes a view in the schema by the
# first docstring up its classes, and one here would become that of every view below without
# one of its own.


class Listing(generics.ListCreateAPIView):
    subject: ClassVar[str]

    @property
    def grants(self) -> dict[str, str]:
        return {"GET": f"{self.subject}:read", "POST": f"{self.subject}:create"}

    def get_queryset(self) -> QuerySet[Any]:
        return super().get_queryset().order_by(self.lookup_field)


class Item(generics.RetrieveUpdateDestroyAPIView):
    subject: ClassVar[str]
    http_method_names = ONE

    @property
    def grants(self) -> dict[str, str]:
        return {
            "GET": f"{self.subject}:read",
            "PATCH": f"{self.subject}:update",
            "DELETE": f"{self.subject}:remove",
        }


# -- people and tokens -----------------------------------------------------------------------


class People:
    subject = "user"
    serializer_class = PersonSerializer
    queryset = User.objects.prefetch_related(
        "memberships__role", "memberships__team", "memberships__project"
    )
    lookup_field = "username"


class PeopleView(People, Listing):
    """People: list them, or add one (a Django user whose username is the id)."""


class PersonView(People, Item):
    """One person, by id: read, change (email, is_active, roles) or remove them."""

    lookup_url_kwarg = "id"


def ws_url(secret: str) -> str:
    """The WebSocket URL a client connects to with this token."""
    return with_token(public_base(), secret)


class TokensView(generics.ListCreateAPIView):
    """A person's tokens (never their secrets), or a new one, whose secret is said once."""

    grants = {"GET": "user:read", "POST": "user:token"}
    serializer_class = TokenSerializer

    def person(self) -> Any:
        return get_object_or_404(User, username=self.kwargs["id"])

    def get_queryset(self) -> QuerySet[Token]:
        return Token.objects.filter(user=self.person()).order_by("created_at", "pk")

    @extend_schema(
        request=MintTokenSerializer,
        responses={201: MintedTokenSerializer},
        description="Mint a token. Its secret is in `token` and `url` this once, never again.",
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        person = self.person()
        asked = MintTokenSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        name = asked.validated_data["name"]
        taken = {"name": [f"{person.username} has a token named {name!r} already"]}
        if Token.objects.filter(user=person, name=name).exists():
            raise exceptions.ValidationError(taken)
        try:
            minted = mint_token(person.username, name)
        except IntegrityError:
            raise exceptions.ValidationError(taken) from None
        context = {"secret": minted.secret, "url": ws_url(minted.secret)}
        response = Response(
            MintedTokenSerializer(minted.token, context=context).data,
            status=status.HTTP_201_CREATED,
        )
        patch_cache_control(response, no_store=True)
        return response


class TokenView(APIView):
    """Revoke a person's token: it stops working at once, on the socket and here."""

    grants = {"DELETE": "user:token"}

    @extend_schema(responses={204: OpenApiResponse(description="revoked")})
    def delete(self, request: Request, id: str, name: str) -> Response:
        token = get_object_or_404(Token, user__username=id, name=name)
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- teams, projects, roles ------------------------------------------------------------------


class Teams:
    subject = "team"
    serializer_class = TeamSerializer
    queryset = Team.objects.prefetch_related("projects")
    lookup_field = "slug"


class TeamsView(Teams, Listing):
    pass


class TeamView(Teams, Item):
    pass


class Projects:
    subject = "project"
    serializer_class = ProjectSerializer
    queryset = Project.objects.select_related("team")
    lookup_field = "slug"


class ProjectsView(Projects, Listing):
    pass


class ProjectView(Projects, Item):
    pass


class Roles:
    subject = "role"
    serializer_class = RoleSerializer
    queryset = Role.objects.all()
    lookup_field = "name"


class RolesView(Roles, Listing):
    pass


class RoleView(Roles, Item):
    """A role. The built-in ones (admin, member, guest) are kept in step by the host: they
    can be neither changed nor removed."""

    def perform_update(self, serializer: RoleSerializer) -> None:
        if serializer.instance is not None and serializer.instance.builtin:
            raise Conflict(f"{serializer.instance.name} is a built-in role: it cannot change")
        serializer.save()

    def perform_destroy(self, instance: Role) -> None:
        if instance.builtin:
            raise Conflict(f"{instance.name} is a built-in role: it cannot be removed")
        instance.delete()


# -- root config -----------------------------------------------------------------------------


class ConfigView(generics.RetrieveAPIView):
    """The root config values clients pushed (root/configChanged), as last written."""

    grants = {"GET": "config:settings"}
    serializer_class = RootConfigSerializer

    def get_object(self) -> RootConfig:
        return RootConfig.objects.filter(key="root").first() or RootConfig(key="root")
