"""The team's MCP servers: the registry beside the operator's AHPD_CONFIG `mcpServers`, each
row offered host-wide or to the teams, projects and people it names (directory.py says which
rows a session's owner is offered). Every write goes through registry.py, which checks a row in
one place and keeps it on the audit trail; env and headers hold secrets, never shown back."""

from __future__ import annotations

from django.db import models

TRANSPORTS = [("stdio", "stdio"), ("http", "http")]


class McpServer(models.Model):
    name = models.CharField(
        max_length=64,
        unique=True,
        help_text="letters, digits, - and _: the name the agent and the model see",
    )
    transport = models.CharField(max_length=8, choices=TRANSPORTS, default="stdio")
    command = models.CharField(max_length=1000, blank=True, default="", help_text="stdio")
    args = models.JSONField(default=list, blank=True, help_text="stdio: a list of strings")
    cwd = models.CharField(max_length=1000, blank=True, default="", help_text="stdio")
    env = models.JSONField(
        default=dict, blank=True, help_text="stdio: {name: value}, secret: never shown back"
    )
    url = models.CharField(max_length=2000, blank=True, default="", help_text="http(s)")
    headers = models.JSONField(
        default=dict, blank=True, help_text="http: {name: value}, secret: never shown back"
    )
    description = models.TextField(blank=True, default="")
    enabled = models.BooleanField(default=True, help_text="off: offered to nobody")
    host_wide = models.BooleanField(default=False, help_text="offered to every session of the host")
    offered_to = models.JSONField(
        default=list,
        blank=True,
        help_text="the teams, projects and people it is offered to: team:<slug>, "
        "project:<slug>, user:<id>",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.name
