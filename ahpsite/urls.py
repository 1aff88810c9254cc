"""Every app's URLs, mounted by the composition root: the apps import none of each other's.

/api/ holds each app's resources (hosts/api/urls.py, automations/urls.py, usage/urls.py,
audit/urls.py, mcp_servers/urls.py) in the one `api` namespace, with the OpenAPI schema
(/api/schema/) and its pages (Swagger UI at /api/docs/, Redoc at /api/redoc/) over all of them.
"""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from audit import urls as audit_urls
from automations import urls as automations_urls
from hosts.api import urls as hosts_api_urls
from hosts.api.health import healthz
from hosts.api.metrics import metrics
from hosts.edge.plain_http import favicon, websocket_door
from mcp_servers import urls as mcp_servers_urls
from usage import urls as usage_urls

api_urlpatterns: list[URLPattern | URLResolver] = [
    *hosts_api_urls.urlpatterns,
    *automations_urls.urlpatterns,
    *usage_urls.urlpatterns,
    *audit_urls.urlpatterns,
    *mcp_servers_urls.urlpatterns,
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
]

urlpatterns = [
    path("", websocket_door, name="websocket-door"),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("metrics", metrics, name="metrics"),
    path("admin/", admin.site.urls),
    # The browsable API's own sign-in and sign-out (the admin site's takes only staff); its
    # templates name the namespace `rest_framework`, so it stands outside the API's.
    path("api/auth/", include("rest_framework.urls")),
    path("api/", include((api_urlpatterns, "api"))),
]

# What fails before a view answers, or escapes one: JSON under /api/, Django's pages elsewhere.
handler400 = "hosts.api.errors.bad_request"
handler403 = "hosts.api.errors.permission_denied"
handler404 = "hosts.api.errors.page_not_found"
handler500 = "hosts.api.errors.server_error"
