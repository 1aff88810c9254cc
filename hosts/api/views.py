"""The API's views of status, teams, projects, roles and root config, and the classes every
resource kept under a key is served by. Each view names, per method, the grant it needs (see
permissions.HoldsGrant). People and tokens are people_views.py's, sessions session_views.py's,
who asks me_views.py's."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..edge.runtime import forget_principals
from ..engine import root_config
from ..engine.grants import allows
from ..engine.host import Host
from ..models import Project, Role, StoredSession, Team
from ..store import keep_role
from ..store.acts import of_request
from ..store.nodes import live as live_nodes
from ..store.nodes import node_json
from .auth import ApiUser, host_name
from .created import created
from .engine_calls import engine_reads
from .filters import ProjectFilter
from .metrics import read_host_status
from .permissions import SIGNED_IN
from .serializers import (
    PrincipalsChangedSerializer,
    ProjectSerializer,
    RoleSerializer,
    RootConfigSerializer,
    StatusSerializer,
    TeamSerializer,
)

User = get_user_model()

#: The methods a resource with a key answers: PATCH changes it; there is no PUT.
ONE = ["get", "patch", "delete", "head", "options"]


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with what the host keeps."
    default_code = "conflict"


# -- the API's root --------------------------------------------------------------------------

#: What the API's root lists: each resource's name and its route in the `api` namespace
#: (the other apps' among them: ahpsite/urls.py mounts every app's routes in it).
RESOURCES = {
    "status": "api:status",
    "me": "api:me",
    "people": "api:people",
    "teams": "api:teams",
    "projects": "api:projects",
    "roles": "api:roles",
    "config": "api:config",
    "sessions": "api:sessions",
    "turns": "api:turns",
    "usage": "api:usage",
    "policies": "api:policies",
    "automations": "api:automations",
    "mcpServers": "api:mcp-servers",
    "schema": "api:schema",
    "docs": "api:docs",
    "redoc": "api:redoc",
}


class ApiRootView(APIView):
    """The API's resources: each one's name and URL. Any signed-in principal reads it; what
    each resource lets them do is its own grant's."""

    grants = {"GET": SIGNED_IN}

    @extend_schema(responses=dict[str, str])
    def get(self, request: Request) -> Response:
        return Response(
            {name: request.build_absolute_uri(reverse(route)) for name, route in RESOURCES.items()}
        )


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
            **read_host_status().to_json(),
            "sessions": StoredSession.objects.count(),
            "people": User.objects.count(),
            # Where each node runs (its machine, pid, address and folders) is the operator's
            # to read: diagnostics:read; anyone else is told none.
            "nodes": (
                [node_json(node) for node in live_nodes()]
                if allows(principal.grants, "diagnostics:read")
                else []
            ),
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
# rows, key and the route of one (for the Location of what a POST made) once, for both of
# its views. A listing comes in pages (pages.py), narrowed by its filterset_class if it has one.
#
# None of these classes has a docstring: drf-spectacular describes a view in the schema by the
# first docstring up its classes, and one here would become that of every view below without
# one of its own.


class Listing(generics.ListCreateAPIView):
    subject: ClassVar[str]
    item_route: ClassVar[str]

    @property
    def grants(self) -> dict[str, str]:
        return {"GET": f"{self.subject}:read", "POST": f"{self.subject}:create"}

    def get_queryset(self) -> QuerySet[Any]:
        return super().get_queryset().order_by(self.lookup_field)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        made = self.get_serializer(data=request.data)
        made.is_valid(raise_exception=True)
        self.perform_create(made)
        key = self.lookup_url_kwarg or self.lookup_field
        path = reverse(self.item_route, kwargs={key: getattr(made.instance, self.lookup_field)})
        return created(request, made.data, path)


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


# -- teams, projects, roles ------------------------------------------------------------------


class Teams:
    subject = "team"
    noun = "team"
    serializer_class = TeamSerializer
    queryset = Team.objects.prefetch_related("projects")
    lookup_field = "slug"
    item_route = "api:team"


class TeamsView(Teams, Listing):
    pass


class TeamView(Teams, Item):
    pass


class Projects:
    subject = "project"
    noun = "project"
    serializer_class = ProjectSerializer
    queryset = Project.objects.select_related("team")
    lookup_field = "slug"
    item_route = "api:project"


class ProjectsView(Projects, Listing):
    filterset_class = ProjectFilter


class ProjectView(Projects, Item):
    pass


class Roles:
    subject = "role"
    noun = "role"
    serializer_class = RoleSerializer
    queryset = Role.objects.all()
    lookup_field = "name"
    item_route = "api:role"


class RolesView(Roles, Listing):
    def perform_create(self, serializer: RoleSerializer) -> None:
        serializer.save()
        keep_role(serializer.instance, by=of_request(self.request, "rest"))


class RoleView(Roles, Item):
    """A role. The built-in ones (admin, member, guest) are kept in step by the host: they
    can be neither changed nor removed."""

    def perform_update(self, serializer: RoleSerializer) -> None:
        if serializer.instance is not None and serializer.instance.builtin:
            raise Conflict(f"{serializer.instance.name} is a built-in role: it cannot change")
        serializer.save()
        keep_role(serializer.instance, by=of_request(self.request, "rest"))

    def perform_destroy(self, instance: Role) -> None:
        if instance.builtin:
            raise Conflict(f"{instance.name} is a built-in role: it cannot be removed")
        keep_role(instance, by=of_request(self.request, "rest"), removed=True)


# -- root config -----------------------------------------------------------------------------


class PrincipalsChangedView(APIView):
    """What people's principals are read from changed in another process (a management
    command, hosts/edge/principal_changes.py): the engine reads these tokens' principals (null:
    every one) again before their next command. Answered once it has taken it."""

    grants = {"POST": "user:update"}

    @extend_schema(request=PrincipalsChangedSerializer, responses={204: None})
    def post(self, request: Request) -> Response:
        serializer = PrincipalsChangedSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        forget_principals(serializer.validated_data["tokens"])
        return Response(status=status.HTTP_204_NO_CONTENT)


async def _root_config(host: Host) -> dict[str, Any]:
    config = host.root.state["config"]
    return {
        "schema": config["schema"],
        "values": root_config.shown(config["schema"], config["values"]),
    }


class ConfigView(APIView):
    """Root config as the engine holds it, the socket's root state says it to who holds
    config:settings: its schema and each key's effective value (its default where nothing set
    it), a credential that is set shown as <set>."""

    grants = {"GET": "config:settings"}

    @extend_schema(responses=RootConfigSerializer)
    def get(self, request: Request) -> Response:
        config = engine_reads(_root_config, what="root config")
        return Response(RootConfigSerializer(config).data)
