"""The audit trail under /api/ (ahpsite/urls.py mounts it in the `api` namespace)."""

from __future__ import annotations

from django.urls import path

from . import api

urlpatterns = [
    path("audit/", api.AuditView.as_view(), name="audit"),
    path("audit/<int:pk>/", api.AuditRecordView.as_view(), name="audit-record"),
]
