"""The MCP servers under /api/ (ahpsite/urls.py mounts them in the `api` namespace)."""

from __future__ import annotations

from django.urls import path

from . import api

urlpatterns = [
    path("mcp-servers/", api.McpServersView.as_view(), name="mcp-servers"),
    path("mcp-servers/<str:name>/", api.McpServerView.as_view(), name="mcp-server"),
]
