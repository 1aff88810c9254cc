"""Usage pools and policy rows under /api/ (ahpsite/urls.py mounts them in the `api`
namespace)."""

from __future__ import annotations

from django.urls import path

from . import api

urlpatterns = [
    path("usage/", api.UsageView.as_view(), name="usage"),
    path("usage/<str:pool>/", api.PoolView.as_view(), name="usage-pool"),
    path("usage/<str:pool>/records/", api.PoolRecordsView.as_view(), name="usage-records"),
    path("policies/", api.PoliciesView.as_view(), name="policies"),
    path("policies/<str:id>/", api.PolicyView.as_view(), name="policy"),
]
