"""Automations under /api/ (ahpsite/urls.py mounts them in the `api` namespace)."""

from __future__ import annotations

from django.urls import path

from . import api

urlpatterns = [
    path("automations/", api.AutomationsView.as_view(), name="automations"),
    path("automations/<str:id>/", api.AutomationView.as_view(), name="automation"),
    path("automations/<str:id>/run/", api.RunNowView.as_view(), name="automation-run"),
    path("automations/<str:id>/runs/", api.RunsView.as_view(), name="automation-runs"),
]
