"""What a run used: the sum of the usage records of the sessions it holds, in the figures the
usage API says (usage/reading.py's totals). Computed when asked, never kept: the meter writes
a record per turn naming its session, and a run names its sessions.

A session disposed and unlinked from its run is no longer counted on the run; what it used
stays in the usage records and the pools it was charged to. What one run used is its owner's
usage: read by its owner, or by a holder of `usage:read`, as a pool is.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, Sum

from hosts.engine.principal import Principal
from usage.models import UsageRecord
from usage.reading import FIGURES, total_json

from .models import AutomationRun

_SUMMED = tuple(f for f in FIGURES if f != "records")


def may_read(principal: Principal, run: AutomationRun) -> bool:
    return principal.ref == run.owner or principal.may("usage:read")


def usage_of_runs(runs: Iterable[AutomationRun]) -> dict[str, dict[str, Any]]:
    """Each run's totals, by run URI, in one query over the records of all their sessions."""
    runs = list(runs)
    run_of = {session: run.uri for run in runs for session in run.sessions}
    sums: dict[str, dict[str, Any]] = {run.uri: {} for run in runs}
    if run_of:
        # No record of a run's session is older than the run: `at` is indexed, `session` not.
        since = datetime.fromtimestamp(min(run.created_ms for run in runs) / 1000, UTC)
        grouped = (
            UsageRecord.objects.filter(session__in=list(run_of), at__gte=since)
            .values("session")
            .annotate(
                records=Count("id"),
                unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
                cost_usd=Sum("cost_usd"),
                **{figure: Sum(figure) for figure in _SUMMED},
            )
        )
        for row in grouped:
            into = sums[run_of[row["session"]]]
            for key in ("records", "unpriced", "cost_usd", *_SUMMED):
                into[key] = (into.get(key) or 0) + (row[key] or 0)
    return {uri: total_json(figures) for uri, figures in sums.items()}


def usage_of_run(run: AutomationRun) -> dict[str, Any]:
    return usage_of_runs([run])[run.uri]


def described(usage: dict[str, Any]) -> str:
    """One line for a person: the admin's run page."""
    cost = Decimal(str(usage["usd"])).quantize(Decimal("0.000001"))
    unpriced = f", {usage['unpriced']} unpriced" if usage["unpriced"] else ""
    return (
        f"{usage['tokens']} tokens ({usage['inputTokens']} in, {usage['outputTokens']} out, "
        f"{usage['cacheReadTokens']} cache read, {usage['cacheWriteTokens']} cache write) "
        f"over {usage['records']} records, ${cost}{unpriced}"
    )
