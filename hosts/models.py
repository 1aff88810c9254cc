"""Durable facts of the host. The engine reaches these only through `hosts.store`."""

from __future__ import annotations

from django.db import models


class RootConfig(models.Model):
    """The root config values clients pushed with root/configChanged; one row per host."""

    key = models.CharField(max_length=64, primary_key=True, default="root")
    values = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "root config"
        verbose_name_plural = "root config"

    def __str__(self) -> str:
        return f"root config ({len(self.values)} keys)"
