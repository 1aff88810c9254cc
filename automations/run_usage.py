"""What a run used: the sum of the usage records of the sessions it holds, in the figures the
usage API says, read by the usage app (usage/reading.py's used_by_sessions, which the
composition root names). Computed when asked, never kept: a run names its sessions.

A session disposed and unlinked from its run is no longer counted on the run; what it used
stays in the usage records and the pools it was charged to. What one run used is its owner's
usage: read by its owner, or by a holder of `usage:read`, as a pool is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from hosts.engine.principal import Principal

from .models import AutomationRun

#: Each group of sessions' usage figures by the group's key, over records since a time.
SessionsUsage = Callable[[Mapping[str, Iterable[str]], datetime], dict[str, dict[str, Any]]]


def sessions_usage() -> SessionsUsage:
    """What reads sessions' usage: the usage app's, named by the composition root
    (settings.AHPD_SESSIONS_USAGE), so that automations imports nothing of usage."""
    reader: SessionsUsage = import_string(settings.AHPD_SESSIONS_USAGE)
    return reader


def may_read(principal: Principal, run: AutomationRun) -> bool:
    return principal.ref == run.owner or principal.may("usage:read")


def usage_of_runs(runs: Iterable[AutomationRun]) -> dict[str, dict[str, Any]]:
    """Each run's totals, by run URI, in one query over the records of all their sessions."""
    runs = list(runs)
    if not runs:
        return {}
    # No record of a run's session is older than the run.
    since = datetime.fromtimestamp(min(run.created_ms for run in runs) / 1000, UTC)
    return sessions_usage()({run.uri: run.sessions for run in runs}, since)


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
