"""/api/audit/: the audit trail, newest first, in pages; read by the host's admins only, and
written by no one here (PUT, PATCH, DELETE and POST are 405)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from hosts.api.auth import ApiUser

from .listing import AuditFilter, record_json
from .models import AuditRecord


class AdminsOnly(BasePermission):
    """A principal who holds every grant host-wide (the admin role, or root)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not isinstance(user, ApiUser):
            return False
        if user.principal.admin:
            return True
        self.message = f"{user.principal.ref} may not read the audit trail: admins only"
        return False


class AuditSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditRecord
        fields = ["id"]

    def to_representation(self, instance: AuditRecord) -> dict[str, Any]:
        return record_json(instance)


class Reading:
    permission_classes = [AdminsOnly]
    serializer_class = AuditSerializer
    queryset = AuditRecord.objects.all()
    http_method_names = ["get", "head", "options"]


@extend_schema(tags=["audit"])
class AuditView(Reading, generics.ListAPIView):
    """The audit trail, newest first: who did what, to what, when and from where."""

    filterset_class = AuditFilter


@extend_schema(tags=["audit"])
class AuditRecordView(Reading, generics.RetrieveAPIView):
    """One record of the audit trail."""
