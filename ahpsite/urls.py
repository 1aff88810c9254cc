from django.contrib import admin
from django.urls import include, path

from hosts.api.health import healthz
from hosts.api.metrics import metrics
from hosts.edge.http_door import websocket_door

urlpatterns = [
    path("", websocket_door, name="websocket-door"),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("admin/", admin.site.urls),
    # The browsable API's own sign-in and sign-out (the admin site's takes only staff); its
    # templates name the namespace `rest_framework`, so it stands outside the API's.
    path("api/auth/", include("rest_framework.urls")),
    path("api/", include("hosts.api.urls")),
]

# What fails before a view answers, or escapes one: JSON under /api/, Django's pages elsewhere.
handler400 = "hosts.api.errors.bad_request"
handler403 = "hosts.api.errors.permission_denied"
handler404 = "hosts.api.errors.page_not_found"
handler500 = "hosts.api.errors.server_error"
