"""Usage records, their per-pool daily rollup, policy rows and what each row has spent.

A record is written once and never edited or deleted (append-only): `save` refuses an update.
The rollup (`UsageDay`) is changed only in the transaction that writes a record, so a pool's
total over any days is the sum of its records over those days.
"""

from __future__ import annotations

from typing import Any

from django.db import models


class AppendOnly(Exception):
    """A usage record cannot be changed or deleted once written."""


class UsageRecord(models.Model):
    """What one turn (or one usage report of it) used, and whom it was charged to."""

    at = models.DateTimeField(db_index=True)
    #: The day `at` falls on in AHPD_USAGE_TIMEZONE, as the rollup keeps it.
    day = models.DateField()
    #: The pools it is charged to: `user:<id>` (who sent the turn), `team:<t>`,
    #: `project:<t>:<p>` ("" when the session's scope names none).
    user_pool = models.CharField(max_length=200)
    team_pool = models.CharField(max_length=200, blank=True, default="")
    project_pool = models.CharField(max_length=300, blank=True, default="")
    session = models.CharField(max_length=2048)
    chat = models.CharField(max_length=2048)
    turn = models.CharField(max_length=200)
    agent = models.CharField(max_length=100)
    model = models.CharField(max_length=200, blank=True, default="")
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    #: US dollars; null when nothing priced it (a model with no price: tokens, no cost).
    cost_usd = models.DecimalField(max_digits=18, decimal_places=8, null=True, blank=True)
    #: `harness` (the agent reported it), `price` (AHPD_CONFIG's prices) or "" (no cost).
    cost_from = models.CharField(max_length=16, blank=True, default="")
    duration_ms = models.BigIntegerField(default=0)
    #: The policy rows this record was charged to.
    payers = models.JSONField(default=list, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["user_pool", "day"]),
            models.Index(fields=["team_pool", "day"]),
            models.Index(fields=["project_pool", "day"]),
        ]

    def __str__(self) -> str:
        return f"{self.turn} {self.user_pool} {self.agent}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise AppendOnly("a usage record is written once and never changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnly("a usage record is never deleted")

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def pools(self) -> list[str]:
        return [p for p in (self.user_pool, self.team_pool, self.project_pool) if p]


class UsageDay(models.Model):
    """One pool's totals for one day (in AHPD_USAGE_TIMEZONE), kept as records are written."""

    pool = models.CharField(max_length=300)
    day = models.DateField()
    records = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=20, decimal_places=8, default=0)
    #: How many of its records carried no cost (tokens with no price).
    unpriced = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "day"], name="usage_day_once")]
        indexes = [models.Index(fields=["day"])]

    def __str__(self) -> str:
        return f"{self.pool} {self.day}"


class Policy(models.Model):
    """Who may use which agent and model, and how much (softov/ahpd's docs/POLICY.md row)."""

    id = models.CharField(max_length=100, primary_key=True)
    scope = models.CharField(max_length=300, default="all")
    kind = models.CharField(max_length=16, default="agent")
    effect = models.CharField(max_length=8, default="allow")
    match = models.JSONField(default=dict, blank=True)
    limits = models.JSONField(default=list, blank=True)
    pool = models.CharField(max_length=100, blank=True, default="")
    cap = models.BooleanField(default=False)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.id


class PolicySpend(models.Model):
    """What one policy row has paid in one measure over one period (from `start`), shared by
    the row's scope (`holder` "") or one person's (`holder` `user:<id>`, an `each` limit)."""

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="spends")
    holder = models.CharField(max_length=200, blank=True, default="")
    measure = models.CharField(max_length=16)
    period = models.CharField(max_length=8)
    start = models.DateField()
    amount = models.DecimalField(max_digits=24, decimal_places=8, default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["policy", "holder", "measure", "period", "start"], name="spend_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.policy_id} {self.measure}/{self.period} {self.start}"
