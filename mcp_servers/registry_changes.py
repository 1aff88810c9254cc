"""Telling the engine that the team's MCP servers changed: a registry row made, changed or
removed (over REST, in the admin, by `ahpd mcp`, which goes through REST), once its transaction
commits, has this process's engine offer every running session what its owner is offered now
and say what a new session starts with (Host.mcp_registry_changed). The REST API, the admin
and the command line all write in the server's own process; a row changed from another
process (a `manage.py shell`) reaches a running session when it next opens."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from hosts.edge import engine_client

from .models import McpServer


def _changed(**_: Any) -> None:
    transaction.on_commit(lambda: engine_client.tell(lambda host: host.mcp_registry_changed()))


def connect() -> None:
    post_save.connect(_changed, sender=McpServer, dispatch_uid="ahpd-mcp-registry-saved")
    post_delete.connect(_changed, sender=McpServer, dispatch_uid="ahpd-mcp-registry-removed")
