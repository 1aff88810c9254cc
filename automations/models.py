"""Automations and their runs, as the engine keeps them (automations/store.py reads and
writes them; the engine's records are hosts/engine/automations/ports.py's).

A scheduled run is claimed by inserting it: (automation, trigger, scheduled time) is unique,
so two claimers of one due time make one run whichever process they run in (beat twice, two
workers, the embedded scheduler), on SQLite and PostgreSQL alike. A manual run's request id is
unique too, which is what makes runAutomation idempotent.
"""

from __future__ import annotations

from django.db import models


class Automation(models.Model):
    uri = models.CharField(max_length=512, primary_key=True, help_text="ahp-automation:/<id>")
    title = models.CharField(max_length=512, blank=True, default="")
    definition = models.JSONField(help_text="the protocol's AutomationDefinition")
    owner = models.CharField(
        max_length=128, blank=True, default="", help_text="user:<id> or root:<host>"
    )
    created_ms = models.BigIntegerField()
    modified_ms = models.BigIntegerField()
    cursors = models.JSONField(
        default=dict, help_text="{triggerId: the last occurrence evaluated (ISO)}"
    )
    run_count = models.IntegerField(
        default=0, help_text="scheduled runs admitted against the afterRuns allowance"
    )
    next_run_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["created_ms"]

    def __str__(self) -> str:
        return self.title or self.uri


class AutomationRun(models.Model):
    ORIGINS = [("manual", "manual"), ("trigger", "trigger")]
    STATUSES = [(s, s) for s in ("pending", "running", "completed", "failed", "cancelled")]

    uri = models.CharField(max_length=512, primary_key=True, help_text="ahp-automation-run:/<id>")
    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="runs")
    owner = models.CharField(max_length=128, blank=True, default="")
    origin_kind = models.CharField(max_length=16, choices=ORIGINS)
    trigger_id = models.CharField(max_length=256, blank=True, default="")
    scheduled_for = models.DateTimeField(null=True, blank=True)
    catch_up = models.BooleanField(default=False)
    request_id = models.CharField(max_length=256, null=True, blank=True, unique=True)
    status = models.CharField(max_length=16, choices=STATUSES, default="pending", db_index=True)
    lifecycle = models.JSONField(help_text="the protocol's AutomationRunLifecycle")
    sessions = models.JSONField(default=list)
    primary_session = models.CharField(max_length=512, blank=True, default="")
    created_ms = models.BigIntegerField(db_index=True)
    #: Where several `serve` processes are nodes of one host: the one that started it (its
    #: session and turn run there). Blank for one process alone, and for a run claimed by a
    #: Celery worker until the node told of it takes it.
    node = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="the node that runs it, where several serve processes are one host",
    )

    class Meta:
        ordering = ["-created_ms"]
        constraints = [
            models.UniqueConstraint(
                fields=["automation", "trigger_id", "scheduled_for"],
                name="one_run_per_due_time",
            )
        ]

    def __str__(self) -> str:
        return self.uri
