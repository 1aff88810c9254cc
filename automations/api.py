"""/api/automations/: automations and their runs, read from the database, and the changes
(create, patch, delete, run now) made by the engine, so every client of the
`ahp-automations://` catalogue is told them. The grants are the socket's: automation:read,
:create, :update, :remove, :run, and someone else's automation takes others:work as well.

An automation is named in the path by its id, the part of `ahp-automation:/<id>` after the
slash; bodies and answers are camelCase, as the protocol's definition is.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from django_filters import rest_framework as filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hosts.api.created import created
from hosts.api.engine_calls import engine_does
from hosts.api.known_fields import KnownFieldsOnly
from hosts.engine.clock import iso

from .models import Automation, AutomationRun
from .run_usage import may_read, usage_of_run, usage_of_runs
from .store import run_record

PREFIX = "ahp-automation:/"


class AutomationSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    id = serializers.SerializerMethodField()
    resource = serializers.CharField(source="uri")
    enabled = serializers.SerializerMethodField()
    nextRunAt = serializers.DateTimeField(source="next_run_at")  # noqa: N815
    runCount = serializers.IntegerField(source="run_count")  # noqa: N815
    createdAt = serializers.SerializerMethodField()  # noqa: N815
    modifiedAt = serializers.SerializerMethodField()  # noqa: N815

    class Meta:
        model = Automation
        fields = [
            "id",
            "resource",
            "title",
            "owner",
            "enabled",
            "definition",
            "nextRunAt",
            "runCount",
            "createdAt",
            "modifiedAt",
        ]

    def get_id(self, row: Automation) -> str:
        return row.uri.removeprefix(PREFIX)

    def get_enabled(self, row: Automation) -> bool:
        return bool(row.definition.get("enabled"))

    def get_createdAt(self, row: Automation) -> str:  # noqa: N802
        return iso(row.created_ms)

    def get_modifiedAt(self, row: Automation) -> str:  # noqa: N802
        return iso(row.modified_ms)


class RunSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    """A run; `usage` is what its sessions used (run_usage.py), null to a reader who may not
    read its owner's usage. A page's usage is read in one query (RunsView)."""

    resource = serializers.CharField(source="uri")
    automation = serializers.CharField(source="automation_id")
    origin = serializers.SerializerMethodField()
    primarySession = serializers.CharField(source="primary_session")  # noqa: N815
    usage = serializers.SerializerMethodField()

    class Meta:
        model = AutomationRun
        fields = [
            "resource",
            "automation",
            "owner",
            "origin",
            "status",
            "lifecycle",
            "sessions",
            "primarySession",
            "usage",
        ]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_origin(self, row: AutomationRun) -> dict[str, Any]:
        return dict(run_record(row)["origin"])

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_usage(self, row: AutomationRun) -> dict[str, Any] | None:
        if not may_read(self.context["request"].user.principal, row):
            return None
        page: dict[str, dict[str, Any]] = self.context.get("usage") or {}
        return page.get(row.uri) or usage_of_run(row)


class NewAutomationSerializer(KnownFieldsOnly):
    id = serializers.RegexField(r"^[A-Za-z0-9._~-]+$", required=False, help_text="chosen id")
    definition = serializers.DictField(help_text="the protocol's AutomationDefinition")


class RunNowSerializer(KnownFieldsOnly):
    requestId = serializers.CharField(  # noqa: N815
        required=False, help_text="asked again with the same id: the same run"
    )


class RunStartedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    resource = serializers.CharField()


class AutomationFilter(filters.FilterSet):
    owner = filters.CharFilter(help_text="whose the automations are: user:<id>")
    title = filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Automation
        fields = ["owner", "title"]


class RunFilter(filters.FilterSet):
    status = filters.ChoiceFilter(choices=AutomationRun.STATUSES)
    origin = filters.ChoiceFilter(field_name="origin_kind", choices=AutomationRun.ORIGINS)

    class Meta:
        model = AutomationRun
        fields = ["status", "origin"]


def _uri(automation_id: str) -> str:
    return PREFIX + automation_id


def _body(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:  # type: ignore[type-arg]
    body = serializer_class(data=request.data)
    body.is_valid(raise_exception=True)
    return dict(body.validated_data)


class AutomationsView(generics.ListAPIView):  # type: ignore[type-arg]
    """Automations, oldest first; POST makes one of yours (its definition checked as the
    socket's automation/createRequested checks it)."""

    grants = {"GET": "automation:read", "POST": "automation:create"}
    serializer_class = AutomationSerializer
    queryset = Automation.objects.order_by("created_ms", "uri")
    filterset_class = AutomationFilter

    @extend_schema(request=NewAutomationSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = _body(NewAutomationSerializer, request)
        uri = _uri(data["id"]) if data.get("id") else None
        entry = engine_does(request, "create_automation", definition=data["definition"], uri=uri)
        automation_id = entry["resource"].removeprefix(PREFIX)
        return created(request, entry, reverse("api:automation", args=[automation_id]))


class AutomationView(generics.RetrieveAPIView):  # type: ignore[type-arg]
    """An automation by its id; PATCH lays a definition patch over it (absent keys are left
    alone); DELETE removes it and its runs."""

    grants = {"GET": "automation:read", "PATCH": "automation:update", "DELETE": "automation:remove"}
    serializer_class = AutomationSerializer
    queryset = Automation.objects.all()

    def get_object(self) -> Automation:
        row = Automation.objects.filter(uri=_uri(self.kwargs["id"])).first()
        if row is None:
            raise exceptions.NotFound(f"Automation not found: {_uri(self.kwargs['id'])}")
        return row

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})
    def patch(self, request: Request, id: str) -> Response:  # noqa: A002
        if not isinstance(request.data, dict):
            raise exceptions.ValidationError({"changes": ["must be an object"]})
        return Response(
            engine_does(request, "update_automation", uri=_uri(id), changes=dict(request.data))
        )

    @extend_schema(responses={204: None})
    def delete(self, request: Request, id: str) -> Response:  # noqa: A002
        engine_does(request, "remove_automation", uri=_uri(id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunNowView(APIView):
    """POST to run an automation now, as its owner; the run is kept before its session is
    made, and a run of it that has not ended is the answer while there is one."""

    grants = {"POST": "automation:run"}

    @extend_schema(request=RunNowSerializer, responses={202: RunStartedSerializer})
    def post(self, request: Request, id: str) -> Response:  # noqa: A002
        data = _body(RunNowSerializer, request)
        result = engine_does(
            request, "run_automation", uri=_uri(id), request_id=data.get("requestId")
        )
        return Response(result, status=status.HTTP_202_ACCEPTED)


class RunsView(generics.ListAPIView):  # type: ignore[type-arg]
    """An automation's runs, newest first, every one kept (the catalogue shows pages), each
    with what its sessions used."""

    grants = {"GET": "automation:read"}
    serializer_class = RunSerializer
    filterset_class = RunFilter

    queryset = AutomationRun.objects.none()

    def get_queryset(self) -> QuerySet[AutomationRun]:
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        uri = _uri(self.kwargs["id"])
        if not Automation.objects.filter(uri=uri).exists():
            raise exceptions.NotFound(f"Automation not found: {uri}")
        return AutomationRun.objects.filter(automation_id=uri).order_by("-created_ms", "uri")

    def get_serializer(self, *args: Any, **kwargs: Any) -> serializers.BaseSerializer:  # type: ignore[type-arg]
        if kwargs.get("many") and args:
            page = list(args[0])
            context = {**self.get_serializer_context(), "usage": usage_of_runs(page)}
            return self.get_serializer_class()(page, *args[1:], context=context, **kwargs)
        return super().get_serializer(*args, **kwargs)
