"""/api/mcp-servers/: the team's MCP servers (mcp:read to read, mcp:write to make, change and
remove one), named in the path by their name. The list is the operator's AHPD_CONFIG servers
(`source: config`, read-only here) then the registry's (`source: registry`), in pages, its query
checked as every list's is. Env and header values are never shown: each set one is `<set>`, and
a PATCH that sends `<set>` for a key keeps the value kept (registry.py, which every interface
writes through, on the audit trail)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hosts.api.created import created
from hosts.api.errors import json_type
from hosts.api.pages import PAGE_PARAMETERS, paged
from hosts.api.query_parameters import TRUE_FALSE, check, refused, true_false
from hosts.store.acts import of_request

from . import registry
from .models import TRANSPORTS

SECRET_HELP = "{name: value}; each value set is shown as <set>, and <set> sent keeps it"


class McpServerSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A server as the API shows it (the schema's; registry.server_json makes it)."""

    name = serializers.CharField(help_text="letters, digits, - and _; what the agent sees")
    source = serializers.ChoiceField(
        choices=[registry.REGISTRY, registry.CONFIG],
        help_text="registry: this API's; config: the operator's AHPD_CONFIG mcpServers",
    )
    transport = serializers.ChoiceField(choices=TRANSPORTS)
    command = serializers.CharField(help_text="stdio: what is run")
    args = serializers.ListField(child=serializers.CharField(), help_text="stdio")
    cwd = serializers.CharField(help_text="stdio: where it runs")
    env = serializers.DictField(child=serializers.CharField(), help_text="stdio: " + SECRET_HELP)
    url = serializers.CharField(help_text="http: an http(s) URL")
    headers = serializers.DictField(child=serializers.CharField(), help_text="http: " + SECRET_HELP)
    description = serializers.CharField()
    enabled = serializers.BooleanField(help_text="false: offered to nobody")
    hostWide = serializers.BooleanField(help_text="offered to every session")  # noqa: N815
    offeredTo = serializers.ListField(  # noqa: N815
        child=serializers.CharField(),
        help_text="and to these: team:<slug>, project:<slug> (and its team), user:<id>",
    )
    createdAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    modifiedAt = serializers.DateTimeField(allow_null=True)  # noqa: N815


class McpServerBodySerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What a POST or a PATCH sends (the schema's; registry.checked checks it): a POST names
    the server and its command or URL; a PATCH only what it changes."""

    name = serializers.CharField()
    transport = serializers.ChoiceField(
        choices=TRANSPORTS, required=False, help_text="left out: http if only a url is given"
    )
    command = serializers.CharField(required=False)
    args = serializers.ListField(child=serializers.CharField(), required=False)
    cwd = serializers.CharField(required=False)
    env = serializers.DictField(child=serializers.CharField(), required=False)
    url = serializers.CharField(required=False)
    headers = serializers.DictField(child=serializers.CharField(), required=False)
    description = serializers.CharField(required=False)
    enabled = serializers.BooleanField(required=False)
    hostWide = serializers.BooleanField(required=False)  # noqa: N815
    offeredTo = serializers.ListField(child=serializers.CharField(), required=False)  # noqa: N815


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


#: What the list takes beside its pages.
QUERY = {
    "transport": "one of stdio, http",
    "enabled": TRUE_FALSE,
    "source": "one of registry, config",
}


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise exceptions.ValidationError(
            {"detail": [f"the body must be a JSON object, not {json_type(request.data)}"]}
        )
    return dict(request.data)


def _refused(exc: Exception) -> exceptions.APIException:
    """A registry refusal in the API's terms."""
    if isinstance(exc, registry.Invalid):
        return exceptions.ValidationError({key: [said] for key, said in exc.problems.items()})
    if isinstance(exc, registry.NoSuchServer):
        return exceptions.NotFound(str(exc))
    return Conflict(str(exc))


REFUSALS = (registry.Invalid, registry.NoSuchServer, registry.NameTaken, registry.FileServer)


class McpServersView(APIView):
    """The MCP servers: the operator's AHPD_CONFIG ones, then the registry's by name, in pages
    (mcp:read); `?transport=`, `?enabled=`, `?source=` narrow it. POST makes a registry server
    (mcp:write); a name the file or another server has is 409."""

    grants = {"GET": "mcp:read", "POST": "mcp:write"}
    query_parameters = QUERY

    @extend_schema(
        operation_id="mcp_servers_list",
        responses=McpServerSerializer(many=True),
        parameters=[
            *PAGE_PARAMETERS,
            *(OpenApiParameter(name, str, description=takes) for name, takes in QUERY.items()),
        ],
    )
    def get(self, request: Request) -> Response:
        check(request, self)
        rows = registry.every_server()
        query = request.query_params
        if (transport := query.get("transport")) is not None:
            if transport not in ("stdio", "http"):
                raise refused("transport", QUERY["transport"], transport)
            rows = [row for row in rows if row["transport"] == transport]
        if (enabled := query.get("enabled")) is not None:
            rows = [row for row in rows if row["enabled"] == true_false("enabled", enabled)]
        if (source := query.get("source")) is not None:
            if source not in (registry.REGISTRY, registry.CONFIG):
                raise refused("source", QUERY["source"], source)
            rows = [row for row in rows if row["source"] == source]
        return paged(request, self, rows)

    @extend_schema(
        operation_id="mcp_servers_create",
        request=McpServerBodySerializer,
        responses={201: McpServerSerializer},
    )
    def post(self, request: Request) -> Response:
        try:
            server = registry.create(_body(request), by=of_request(request, "rest"))
        except REFUSALS as exc:
            raise _refused(exc) from None
        return created(request, server, reverse("api:mcp-server", kwargs={"name": server["name"]}))


class McpServerView(APIView):
    """One MCP server by name (mcp:read); PATCH lays the fields it names over a registry
    server's, DELETE removes one (mcp:write). The file's servers are changed in the file:
    409 here."""

    grants = {"GET": "mcp:read", "PATCH": "mcp:write", "DELETE": "mcp:write"}

    @extend_schema(operation_id="mcp_server_read", responses=McpServerSerializer)
    def get(self, request: Request, name: str) -> Response:
        try:
            return Response(registry.one_server(name))
        except registry.NoSuchServer as exc:
            raise _refused(exc) from None

    @extend_schema(
        operation_id="mcp_server_update",
        request=McpServerBodySerializer,
        responses=McpServerSerializer,
    )
    def patch(self, request: Request, name: str) -> Response:
        try:
            return Response(registry.update(name, _body(request), by=of_request(request, "rest")))
        except REFUSALS as exc:
            raise _refused(exc) from None

    @extend_schema(
        operation_id="mcp_server_delete", responses={204: OpenApiResponse(description="removed")}
    )
    def delete(self, request: Request, name: str) -> Response:
        try:
            registry.remove(name, by=of_request(request, "rest"))
        except REFUSALS as exc:
            raise _refused(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)
