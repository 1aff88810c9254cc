"""The API's root (/api/: every resource's URL) and the host's resources under it: status,
me, people and their tokens, teams, projects, roles, config, sessions and turns.
ahpsite/urls.py mounts them with the other apps' (usage/urls.py, automations/urls.py) and the
schema's pages, in the one `api` namespace.

Every route ends in a slash, as Django REST framework's do; the same path without it is served
by the same view (hosts/api/trailing_slash.py). A session's URI is URL-encoded in the path.
A path nothing here answers is a JSON 404 (hosts/api/errors.py, named in ahpsite/urls.py).
"""

from __future__ import annotations

from django.urls import path, re_path

from . import me_views, people_views, session_views, turn_views, views

urlpatterns = [
    path("", views.ApiRootView.as_view(), name="root"),
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
]
