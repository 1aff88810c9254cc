from django.contrib import admin
from django.urls import include, path

from hosts.edge.http_door import websocket_door

urlpatterns = [
    path("", websocket_door, name="websocket-door"),
    path("admin/", admin.site.urls),
    path("api/", include("hosts.api.urls")),
]
