"""/api/...: the resources, the OpenAPI schema (/api/schema/) and its pages (Swagger UI at
/api/docs/, Redoc at /api/redoc/), besides the browsable API of every resource.

Every route ends in a slash, as Django REST framework's do; the same path without it is served
by the same view (hosts/api/trailing_slash.py). A session's URI is URL-encoded in the path.
A path nothing here answers is a JSON 404 (hosts/api/errors.py, named in ahpsite/urls.py).
"""

from __future__ import annotations

from django.urls import path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from automations import api as automations_api
from usage import api as usage_api

from . import me_views, people_views, session_views, turn_views, views

app_name = "api"

urlpatterns = [
    path("status/", views.StatusView.as_view(), name="status"),
    path("me/", me_views.MeView.as_view(), name="me"),
    path("me/tokens/", me_views.MyTokensView.as_view(), name="my-tokens"),
    path("me/tokens/<str:name>/", me_views.MyTokenView.as_view(), name="my-token"),
    path("people/", people_views.PeopleView.as_view(), name="people"),
    path("people/<str:id>/", people_views.PersonView.as_view(), name="person"),
    path("people/<str:id>/tokens/", people_views.TokensView.as_view(), name="tokens"),
    path("people/<str:id>/tokens/<str:name>/", people_views.TokenView.as_view(), name="token"),
    path("teams/", views.TeamsView.as_view(), name="teams"),
    path("teams/<slug:slug>/", views.TeamView.as_view(), name="team"),
    path("projects/", views.ProjectsView.as_view(), name="projects"),
    path("projects/<slug:slug>/", views.ProjectView.as_view(), name="project"),
    path("roles/", views.RolesView.as_view(), name="roles"),
    path("roles/<slug:name>/", views.RoleView.as_view(), name="role"),
    path("config/", views.ConfigView.as_view(), name="config"),
    path(
        "principals/changed/",
        views.PrincipalsChangedView.as_view(),
        name="principals-changed",
    ),
    path("sessions/", session_views.SessionsView.as_view(), name="sessions"),
    path("turns/", turn_views.RunningTurnsView.as_view(), name="turns"),
    re_path(
        r"^sessions/(?P<uri>.+)/messages/$",
        session_views.SessionMessagesView.as_view(),
        name="session-messages",
    ),
    re_path(
        r"^sessions/(?P<uri>.+)/cancel/$",
        session_views.SessionCancelView.as_view(),
        name="session-cancel",
    ),
    path("sessions/<path:uri>/", session_views.SessionView.as_view(), name="session"),
    path("automations/", automations_api.AutomationsView.as_view(), name="automations"),
    path("automations/<str:id>/", automations_api.AutomationView.as_view(), name="automation"),
    path("automations/<str:id>/run/", automations_api.RunNowView.as_view(), name="automation-run"),
    path("automations/<str:id>/runs/", automations_api.RunsView.as_view(), name="automation-runs"),
    path("usage/", usage_api.UsageView.as_view(), name="usage"),
    path("usage/<str:pool>/", usage_api.PoolView.as_view(), name="usage-pool"),
    path("usage/<str:pool>/records/", usage_api.PoolRecordsView.as_view(), name="usage-records"),
    path("policies/", usage_api.PoliciesView.as_view(), name="policies"),
    path("policies/<str:id>/", usage_api.PolicyView.as_view(), name="policy"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
]
