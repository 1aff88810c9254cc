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


class StoredSession(models.Model):
    """A session's record: what this host keeps about it beside the agent's own transcript."""

    uri = models.CharField(max_length=512, primary_key=True)
    provider = models.CharField(max_length=128)
    title = models.TextField(blank=True, default="")
    created_ms = models.BigIntegerField()
    modified_ms = models.BigIntegerField(db_index=True)
    default_chat = models.CharField(max_length=512)
    working_directories = models.JSONField(default=list)
    config = models.JSONField(default=dict)
    is_read = models.BooleanField(default=False)
    is_archived = models.BooleanField(default=False)
    announced = models.BooleanField(default=False)
    chats = models.JSONField(default=list, help_text="chat URIs in order")

    class Meta:
        verbose_name = "session"
        ordering = ["-modified_ms"]

    def __str__(self) -> str:
        return self.title or self.uri


class StoredChat(models.Model):
    uri = models.CharField(max_length=512, primary_key=True)
    session = models.ForeignKey(StoredSession, on_delete=models.CASCADE, related_name="chat_rows")
    title = models.TextField(blank=True, default="")
    created_ms = models.BigIntegerField()
    backend_id = models.CharField(max_length=256, blank=True, null=True)
    is_read = models.BooleanField(default=False)
    is_archived = models.BooleanField(default=False)
    draft = models.JSONField(blank=True, null=True)

    class Meta:
        verbose_name = "chat"

    def __str__(self) -> str:
        return self.title or self.uri


class StoredTurn(models.Model):
    """A finished turn (or, with state "running", one in flight) as the protocol's Turn."""

    chat = models.ForeignKey(StoredChat, on_delete=models.CASCADE, related_name="turn_rows")
    position = models.IntegerField()
    turn_id = models.CharField(max_length=256)
    data = models.JSONField()

    class Meta:
        verbose_name = "turn"
        ordering = ["chat", "position"]
        constraints = [
            models.UniqueConstraint(fields=["chat", "position"], name="one_turn_per_position")
        ]

    def __str__(self) -> str:
        return f"{self.chat_id} #{self.position}"
