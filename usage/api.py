"""/api/usage and /api/policies: the same figures and rows the `usage:` and `policy:` schemes
read, refused to the same readers (a pool not the caller's is 403 without usage:read). Every
list comes in pages (hosts/api/pages.py), its query checked as every list's is
(hosts/api/query_parameters.py); a policy that cannot be kept is refused naming each field
that is wrong."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hosts.api.auth import ApiUser
from hosts.api.created import created
from hosts.api.pages import PAGE_PARAMETERS, paged
from hosts.api.permissions import SIGNED_IN
from hosts.api.query_parameters import DAY, day
from hosts.engine.principal import Principal
from hosts.store.acts import of_request

from . import policy_rows, reading
from .decide import PolicyError


def _principal(request: Request) -> Principal:
    assert isinstance(request.user, ApiUser)
    return request.user.principal


def _pool(request: Request, pool: str) -> str:
    try:
        reading.require_pool(_principal(request), pool)
    except reading.Refused as exc:
        raise exceptions.PermissionDenied(str(exc)) from None
    except reading.BadQuery as exc:
        raise exceptions.ValidationError({"detail": str(exc)}) from None
    return pool


def _bad(exc: Exception) -> exceptions.ValidationError:
    """A 400 saying what is wrong: field by field for a policy that names its fields."""
    problems = getattr(exc, "problems", None)
    return exceptions.ValidationError(problems or {"detail": str(exc)})


def _no_such_policy(policy_id: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"no such policy: {policy_id}")


class UsageView(APIView):
    """The pools the caller may read, each with its day, week and month, in pages."""

    grants = {"GET": SIGNED_IN}

    @extend_schema(operation_id="usage_list", responses=dict, parameters=PAGE_PARAMETERS)
    def get(self, request: Request) -> Response:
        return paged(request, self, reading.readable(_principal(request)), reading.pool_json)


class PoolView(APIView):
    """One pool: its day, week and month, or with `?from=&until=` one total between days."""

    grants = {"GET": SIGNED_IN}

    @extend_schema(operation_id="usage_pool", responses=dict)
    def get(self, request: Request, pool: str) -> Response:
        _pool(request, pool)
        since, until = request.query_params.get("from"), request.query_params.get("until")
        try:
            if since or until:
                return Response(reading.range_json(pool, since, until))
            return Response(reading.pool_json(pool))
        except reading.BadQuery as exc:
            raise _bad(exc) from None


class PoolRecordsView(APIView):
    """The records charged to a pool, newest first, in pages; `?from=&until=` days."""

    grants = {"GET": SIGNED_IN}
    query_parameters = {"from": DAY, "until": DAY}

    @extend_schema(
        operation_id="usage_records",
        responses=dict,
        parameters=[
            *PAGE_PARAMETERS,
            *(OpenApiParameter(name, date, description=DAY) for name in ("from", "until")),
        ],
    )
    def get(self, request: Request, pool: str) -> Response:
        _pool(request, pool)
        rows = reading.records_of(pool)
        if (since := request.query_params.get("from")) is not None:
            rows = rows.filter(day__gte=day("from", since))
        if (until := request.query_params.get("until")) is not None:
            rows = rows.filter(day__lte=day("until", until))
        return paged(request, self, rows, reading.record_json)


class PoliciesView(APIView):
    """Every policy row (policy:read), in pages, oldest first; POST makes one, its id in the body
    (policy:write)."""

    grants = {"GET": "policy:read", "POST": "policy:write"}

    @extend_schema(operation_id="policies_list", responses=dict, parameters=PAGE_PARAMETERS)
    def get(self, request: Request) -> Response:
        return paged(request, self, policy_rows.all_rows())

    @extend_schema(operation_id="policies_create", request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        body: Any = request.data
        if not isinstance(body, dict):
            raise _bad(ValueError("the body must be a JSON object: a policy row"))
        if not isinstance(body.get("id"), str):
            raise exceptions.ValidationError({"id": ["a policy needs an id"]})
        try:
            row = policy_rows.write_row(
                body["id"], body, create_only=True, by=of_request(request, "rest")
            )
        except PolicyError as exc:
            raise _bad(exc) from None
        except policy_rows.PolicyExists as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return created(request, row, reverse("api:policy", kwargs={"id": row["id"]}))


class PolicyView(APIView):
    """One row: PATCH merges the fields named over it, DELETE takes it away."""

    grants = {"GET": "policy:read", "PATCH": "policy:write", "DELETE": "policy:write"}

    @extend_schema(operation_id="policy_read", responses=dict)
    def get(self, request: Request, id: str) -> Response:
        try:
            return Response(policy_rows.one_row(id))
        except policy_rows.NoSuchPolicy:
            raise _no_such_policy(id) from None

    @extend_schema(operation_id="policy_update", request=dict, responses=dict)
    def patch(self, request: Request, id: str) -> Response:
        try:
            policy_rows.one_row(id)
            return Response(policy_rows.write_row(id, request.data, by=of_request(request, "rest")))
        except policy_rows.NoSuchPolicy:
            raise _no_such_policy(id) from None
        except PolicyError as exc:
            raise _bad(exc) from None

    @extend_schema(
        operation_id="policy_delete", responses={204: OpenApiResponse(description="removed")}
    )
    def delete(self, request: Request, id: str) -> Response:
        try:
            policy_rows.delete_row(id, by=of_request(request, "rest"))
        except policy_rows.NoSuchPolicy:
            raise _no_such_policy(id) from None
        return Response(status=status.HTTP_204_NO_CONTENT)
