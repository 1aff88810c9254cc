from django.contrib import admin
from django.urls import include, path

from hosts import views

urlpatterns = [
    path("", views.websocket_door, name="websocket-door"),
    path("admin/", admin.site.urls),
    path("api/", include("hosts.api.urls")),
]
