from django.contrib import admin
from django.urls import path

from hosts import views

urlpatterns = [
    path("", views.websocket_door, name="websocket-door"),
    path("admin/", admin.site.urls),
]
