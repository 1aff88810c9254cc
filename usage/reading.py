"""Reading usage: the pools a person may read and their totals, from the daily rollup.

Shared by the `usage:` scheme, the REST API and `manage.py ahpd usage`, so all three say the
same figures and refuse the same readers. A person reads their own pools (`user:<id>`, their
teams' and their projects') with no grant; every other pool needs `usage:read`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from hosts.engine.principal import Principal
from hosts.store.project_teams import team_known, teams_of_projects

from .models import UsageDay, UsageRecord
from .periods import Periods, zone_of

FIGURES = ("records", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
GROUPS = {"user": "user:", "team": "team:", "project": "project:"}
RECORDS_AT_MOST = 200


class Refused(Exception):
    """The reader may not read this (a 403, a -32009)."""


class BadQuery(ValueError):
    """A pool, a date or a grouping that is not one (a 400, a -32602)."""


def may_read_all(principal: Principal) -> bool:
    return principal.may("usage:read")


def own_pools(principal: Principal) -> list[str]:
    """The pools a person reads with no grant: their own, their teams', their projects'."""
    pools = [principal.ref]
    teams = [s.removeprefix("team:") for s in principal.scoped if s.startswith("team:")]
    pools += [f"team:{t}" for t in teams]
    slugs = [s.removeprefix("project:") for s in principal.scoped if s.startswith("project:")]
    for slug, team in teams_of_projects(slugs).items():
        pools.append(f"project:{team}:{slug}")
    return pools


def readable(principal: Principal) -> list[str]:
    """Every pool charged so far that the reader may read (their own ones even if not)."""
    if may_read_all(principal):
        return list(UsageDay.objects.order_by("pool").values_list("pool", flat=True).distinct())
    return own_pools(principal)


def require_pool(principal: Principal, pool: str) -> None:
    check_pool(pool)
    if not may_read_all(principal) and pool not in own_pools(principal):
        raise Refused(f"{principal.ref} may not usage:read here ({pool} is not theirs)")


def check_pool(pool: str) -> str:
    kind, _, rest = pool.partition(":")
    parts = rest.split(":")
    ok = (kind in ("user", "team", "root") and len(parts) == 1 and parts[0]) or (
        kind == "project" and len(parts) == 2 and all(parts)
    )
    if not ok:
        raise BadQuery(f"not a pool: {pool!r} (user:<id>, team:<t> or project:<t>:<p>)")
    return pool


def unknown_pool(pool: str) -> str | None:
    """Why a pool (one check_pool took) is no one's: a person, team or project that is not
    there and was never charged; None where it is, or was charged once (a person removed
    since keeps the usage they made)."""
    if UsageDay.objects.filter(pool=pool).exists():
        return None
    kind, _, name = pool.partition(":")
    if kind == "user" and not get_user_model().objects.filter(username=name).exists():
        return f"no person {name!r}, and nothing charged to {pool}"
    if kind == "team" and not team_known(name):
        return f"no team {name!r}, and nothing charged to {pool}"
    if kind == "project":
        team, _, project = name.partition(":")
        if teams_of_projects([project]).get(project) != team:
            return f"no project {project!r} in team {team!r}, and nothing charged to {pool}"
    return None


def day_of(value: str | None, default: date, name: str) -> date:
    if not value:
        return default
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadQuery(f"{name} must be a day, YYYY-MM-DD, not {value!r}") from None


def periods() -> Periods:
    return Periods.at(timezone.now(), zone_of(settings.AHPD_USAGE_TIMEZONE))


def total_json(sums: dict[str, Any]) -> dict[str, Any]:
    figures = {key: int(sums.get(key) or 0) for key in FIGURES}
    tokens = sum(figures[k] for k in FIGURES if k != "records")
    cost = sums.get("cost_usd") or Decimal(0)
    return {
        "records": figures["records"],
        "inputTokens": figures["input_tokens"],
        "outputTokens": figures["output_tokens"],
        "cacheReadTokens": figures["cache_read_tokens"],
        "cacheWriteTokens": figures["cache_write_tokens"],
        "tokens": tokens,
        "usd": float(cost),
        "unpriced": int(sums.get("unpriced") or 0),
    }


def _sums(days: QuerySet[UsageDay]) -> dict[str, Any]:
    return days.aggregate(**{key: Sum(key) for key in (*FIGURES, "cost_usd", "unpriced")})


def total(pool: str, first: date, last: date) -> dict[str, Any]:
    """A pool's totals over days `first` to `last`, both whole, from the rollup."""
    return total_json(_sums(UsageDay.objects.filter(pool=pool, day__gte=first, day__lte=last)))


def pool_json(pool: str) -> dict[str, Any]:
    """`{pool, kind, name, day, week, month}`: today, this week and this month so far."""
    now = periods()
    kind, _, name = pool.partition(":")
    return {
        "pool": pool,
        "kind": kind,
        "name": name,
        "day": total(pool, now.today, now.today),
        "week": total(pool, now.week, now.today),
        "month": total(pool, now.month, now.today),
    }


def range_json(pool: str, since: str | None, until: str | None) -> dict[str, Any]:
    now = periods()
    first = day_of(since, now.month, "from")
    last = day_of(until, now.today, "until")
    return {
        "pool": pool,
        "from": first.isoformat(),
        "until": last.isoformat(),
        **total(pool, first, last),
    }


def daily(pool: str, first: date, last: date) -> list[dict[str, Any]]:
    """Each day of the range that has usage, oldest first (the admin's chart)."""
    rows = UsageDay.objects.filter(pool=pool, day__gte=first, day__lte=last).order_by("day")
    return [
        {
            "day": r.day.isoformat(),
            "usd": float(r.cost_usd),
            "tokens": r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens,
            "records": r.records,
        }
        for r in rows
    ]


def records_of(pool: str) -> QuerySet[UsageRecord]:
    return UsageRecord.objects.filter(
        Q(user_pool=pool) | Q(team_pool=pool) | Q(project_pool=pool)
    ).order_by("-at", "-pk")


def record_json(record: UsageRecord) -> dict[str, Any]:
    return {
        "at": record.at.isoformat().replace("+00:00", "Z"),
        "day": record.day.isoformat(),
        "pools": record.pools(),
        "session": record.session,
        "chat": record.chat,
        "turn": record.turn,
        "agent": record.agent,
        "model": record.model or None,
        "inputTokens": record.input_tokens,
        "outputTokens": record.output_tokens,
        "cacheReadTokens": record.cache_read_tokens,
        "cacheWriteTokens": record.cache_write_tokens,
        "tokens": record.tokens,
        "cost": None
        if record.cost_usd is None
        else {"usd": float(record.cost_usd), "from": record.cost_from},
        "durationMs": record.duration_ms,
        "payers": record.payers,
    }


def records_json(pool: str, since: str | None, until: str | None) -> dict[str, Any]:
    """The newest records charged to the pool, at most 200, in the days asked (whole)."""
    rows = records_of(pool)
    if since:
        rows = rows.filter(day__gte=day_of(since, date.min, "from"))
    if until:
        rows = rows.filter(day__lte=day_of(until, date.max, "until"))
    return {"pool": pool, "records": [record_json(r) for r in rows[:RECORDS_AT_MOST]]}


def groups_json(
    principal: Principal, by: str | None, since: str | None, until: str | None
) -> dict[str, Any]:
    """The totals of every pool of a kind (user, team, project) over the days asked: every
    pool with `usage:read`, a person's own otherwise."""
    by = by or "user"
    if by not in GROUPS:
        raise BadQuery(f"by must be one of {', '.join(GROUPS)}, not {by!r}")
    now = periods()
    first = day_of(since, now.month, "from")
    last = day_of(until, now.today, "until")
    days = UsageDay.objects.filter(day__gte=first, day__lte=last, pool__startswith=GROUPS[by])
    if not may_read_all(principal):
        days = days.filter(pool__in=own_pools(principal))
    sums = (
        days.values("pool")
        .order_by("pool")
        .annotate(**{key: Sum(key) for key in (*FIGURES, "cost_usd", "unpriced")})
    )
    return {
        "by": by,
        "from": first.isoformat(),
        "until": last.isoformat(),
        "groups": [{"pool": row["pool"], **total_json(row)} for row in sums],
    }


def readable_by_operator() -> list[str]:
    """Every pool charged so far (the command line is the operator's)."""
    return list(UsageDay.objects.order_by("pool").values_list("pool", flat=True).distinct())


def used_by_sessions(
    groups: Mapping[str, Iterable[str]], since: datetime
) -> dict[str, dict[str, Any]]:
    """Each group's totals (total_json's figures) over the usage records of its sessions
    written since `since`, by the group's key, in one query over every group's sessions.
    Computed when asked, never kept: the meter writes a record per turn naming its session.
    What an automation run used is this, its sessions grouped by run (AHPD_SESSIONS_USAGE)."""
    groups = {key: list(sessions) for key, sessions in groups.items()}
    summed = [figure for figure in FIGURES if figure != "records"]
    sums: dict[str, dict[str, Any]] = {key: {} for key in groups}
    sessions = {session for members in groups.values() for session in members}
    if sessions:
        # `since` bounds the query by `at`, which is indexed; `session` is not.
        rows = {
            row["session"]: row
            for row in UsageRecord.objects.filter(session__in=sessions, at__gte=since)
            .values("session")
            .annotate(
                records=Count("id"),
                unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
                cost_usd=Sum("cost_usd"),
                **{figure: Sum(figure) for figure in summed},
            )
        }
        for key, members in groups.items():
            into = sums[key]
            for row in (rows[session] for session in members if session in rows):
                for figure in ("records", "unpriced", "cost_usd", *summed):
                    into[figure] = (into.get(figure) or 0) + (row[figure] or 0)
    return {key: total_json(figures) for key, figures in sums.items()}


def used_by_turns(turns: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each turn's totals (total_json's figures) over its usage records, by turn id, in one
    query; a turn with no record yet is left out. The admin's Turns list and its running-now
    page read it (AHPD_TURNS_USAGE): a turn's record is written as it ends, or as each usage
    report arrives with AHPD_USAGE_PER=report."""
    turns = [turn for turn in turns if turn]
    if not turns:
        return {}
    summed = [figure for figure in FIGURES if figure != "records"]
    rows = (
        UsageRecord.objects.filter(turn__in=turns)
        .values("turn")
        .annotate(
            records=Count("id"),
            unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
            cost_usd=Sum("cost_usd"),
            **{figure: Sum(figure) for figure in summed},
        )
    )
    return {row["turn"]: total_json(row) for row in rows}
