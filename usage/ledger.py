"""Writing usage down and checking policies against it, each in one database transaction.

`admit` checks a turn (or a session) by the four steps and, for a turn, charges its start to
the row that pays in each scope; `record` writes a usage record, adds it to its pools' days
and charges it to the rows that paid for the turn. A row is locked (SELECT ... FOR UPDATE on
PostgreSQL; SQLite has one writer at a time) before what it has spent is read, so two turns
starting at once cannot both take the last of a `turns` budget.

Dollars, tokens and hours are not known before a turn runs, so nothing of them is reserved: a
turn is admitted while its row has spent less than its amount, and what it spends is charged
whole as it is recorded. Turns already admitted may together overspend a money budget by their
own use; a record that leaves a payer spent says so (`write_record`), which stops a running
turn with AHPD_USAGE_PER=report, and the next turn is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from hosts.engine.meter import Admission, Use, Work
from hosts.store.project_teams import teams_of_projects

from .decide import Ask, Decision, Limit, Row, decide, glob_matches
from .models import Policy, PolicySpend, UsageDay, UsageRecord
from .periods import local_day, period_start, zone_of

T = TypeVar("T")

#: A limit counted at a turn's start (one turn), the others as usage is recorded.
AT_START = "turns"


def zone() -> object:
    return zone_of(settings.AHPD_USAGE_TIMEZONE)


@dataclass(frozen=True, slots=True)
class Where:
    """The pools a session's scope charges: its team and project slugs ("" for none)."""

    team: str = ""
    project: str = ""

    @property
    def team_pool(self) -> str:
        return f"team:{self.team}" if self.team else ""

    @property
    def project_pool(self) -> str:
        return f"project:{self.team}:{self.project}" if self.project else ""


def where_of(scope: str) -> Where:
    kind, _, slug = scope.partition(":")
    if kind == "team":
        return Where(slug)
    if kind == "project":
        return Where(teams_of_projects([slug]).get(slug, ""), slug)
    return Where()


def row_of(policy: Policy) -> Row:
    from .decide import parse_row

    body = {
        "scope": policy.scope,
        "kind": policy.kind,
        "effect": policy.effect,
        "match": policy.match,
        "limits": policy.limits,
        "pool": policy.pool,
        "cap": policy.cap,
    }
    row = parse_row(policy.id, body)
    return Row(
        row.id,
        row.scope,
        row.kind,
        row.effect,
        row.match,
        row.limits,
        row.pool,
        row.cap,
        policy.valid_from,
        policy.valid_until,
        policy.created_at,
    )


def checked(work: Work) -> bool:
    """Whether policies decide this work: switched on, and a person (not root, not an
    automation with no owner, not a holder of `*:*`) asks."""
    return (
        bool(settings.AHPD_POLICIES_CHECK)
        and work.person.startswith("user:")
        and not (work.admin or _holds_everything(work.person))
    )


def _holds_everything(person: str) -> bool:
    from django.contrib.auth import get_user_model

    from hosts.store.directory import held_by

    user = get_user_model().objects.filter(username=person.removeprefix("user:")).first()
    return user is not None and "*:*" in held_by(user.pk).grants


def _ask(work: Work, where: Where) -> Ask:
    values = {"agent": work.agent}
    if work.model:
        values["model"] = work.model
    return Ask(work.person, where.team, where.project, values)


def _rows(kind: str) -> list[Row]:
    return [row_of(p) for p in Policy.objects.filter(kind=kind)]


def retried(work: Callable[[], T]) -> T:
    """Run a transaction (or a read) again while SQLite says another connection holds its
    write lock (a shared cache, as the tests' in-memory database, locks reads out too)."""
    for attempt in range(100):
        try:
            return work()
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == 99:
                raise
            time.sleep(0.005 * (attempt + 1))
    raise AssertionError("unreachable")


# -- what a row has spent ----------------------------------------------------------------------


def holder(limit: Limit, person: str) -> str:
    return person if limit.pool == "each" else ""


def spent(row: Row, limit: Limit, person: str, now: datetime) -> Decimal:
    start = period_start(limit.period, local_day(now, zone_of(settings.AHPD_USAGE_TIMEZONE)))
    amount = (
        PolicySpend.objects.filter(
            policy_id=row.id,
            holder=holder(limit, person),
            measure=limit.measure,
            period=limit.period,
            start=start,
        )
        .values_list("amount", flat=True)
        .first()
    )
    return amount if amount is not None else Decimal(0)


def exhausted(row: Row, person: str, now: datetime, *, starting: bool) -> Limit | None:
    """The row's first limit with no room left (a turn starting needs room for one more turn
    and some of every other measure), or None."""
    for limit in row.limits:
        used = spent(row, limit, person, now)
        more = 1 if starting and limit.measure == AT_START else 0
        if (used + more > limit.amount) if more else (used >= limit.amount):
            return limit
    return None


def spent_words(row: Row, limit: Limit) -> str:
    share = "each person's " if limit.pool == "each" else ""
    per = "in total" if limit.period == "total" else f"a {limit.period}"
    return f"{row.id} has spent {share}{_amount(limit.amount)} {limit.measure} {per}"


def _amount(value: Decimal) -> str:
    return format(value.normalize(), "f") if value % 1 else str(int(value))


def charge(row: Row, person: str, measure: str, amount: Decimal, now: datetime) -> None:
    day = local_day(now, zone_of(settings.AHPD_USAGE_TIMEZONE))
    for limit in row.limits:
        if limit.measure != measure or not amount:
            continue
        key = {
            "policy_id": row.id,
            "holder": holder(limit, person),
            "measure": measure,
            "period": limit.period,
            "start": period_start(limit.period, day),
        }
        if not PolicySpend.objects.filter(**key).update(amount=F("amount") + amount):
            try:
                with transaction.atomic():
                    PolicySpend.objects.create(**key, amount=amount)
            except IntegrityError:
                PolicySpend.objects.filter(**key).update(amount=F("amount") + amount)


# -- the checks --------------------------------------------------------------------------------


def check_session(work: Work) -> str | None:
    """Why a session of the agent may not be made (steps 2 to 4, and a spent row), or None."""
    if not retried(lambda: checked(work)):
        return None
    return retried(lambda: _admitted(work, charge_start=False)).refusal


def admit_turn(work: Work, now: datetime | None = None) -> Admission:
    """Check a turn and charge its start, in one transaction."""
    if not retried(lambda: checked(work)):
        return Admission()
    return retried(lambda: _admitted(work, charge_start=True, now=now or timezone.now()))


def _admitted(work: Work, *, charge_start: bool, now: datetime | None = None) -> Admission:
    now = now or timezone.now()
    with transaction.atomic():
        ask = _ask(work, where_of(work.scope))
        decision: Decision = decide(_rows("agent"), ask, now, settings.AHPD_POLICIES_PAY_ORDER)
        if decision.refusal is not None:
            return Admission(decision.refusal)
        ids = sorted(row.id for group in decision.payers for row in group)
        # Locked in one order, so two starts wait for each other rather than deadlock.
        list(Policy.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
        payers: list[Row] = []
        for group in decision.payers:
            payer = next(
                (r for r in group if exhausted(r, work.person, now, starting=True) is None), None
            )
            if payer is None:
                first = group[0]
                limit = exhausted(first, work.person, now, starting=True)
                assert limit is not None
                return Admission(f"{spent_words(first, limit)}: {ask.said()} is refused")
            payers.append(payer)
        if charge_start:
            for payer in payers:
                charge(payer, work.person, AT_START, Decimal(1), now)
        return Admission(None, tuple(p.id for p in payers))


# -- records -----------------------------------------------------------------------------------


@cache
def _prices() -> dict[str, dict[str, dict[str, float]]]:
    """Each configured agent's prices (AHPD_CONFIG), by provider."""
    from hosts.backends.config import load_agents

    if not settings.AHPD_CONFIG:
        return {}
    configs = load_agents(Path(settings.AHPD_CONFIG).expanduser())
    return {c.provider: {m: dict(p) for m, p in c.prices.items()} for c in configs}


def priced(use: Use) -> tuple[Decimal | None, str]:
    """The cost charged (the agent's own where it said one, else AHPD_CONFIG's price for the
    model, else none) and where it came from."""
    if use.cost_usd is not None:
        return Decimal(str(use.cost_usd)), "harness"
    model = use.work.model or ""
    prices = _prices().get(use.work.agent, {})
    price = next((p for glob, p in prices.items() if glob_matches(glob, model)), None)
    if price is None:
        return None, ""
    figures = (
        (use.input_tokens, "input"),
        (use.output_tokens, "output"),
        (use.cache_read_tokens, "cacheRead"),
        (use.cache_write_tokens, "cacheWrite"),
    )
    total = sum(Decimal(tokens) * Decimal(str(price.get(key, 0))) for tokens, key in figures)
    return (total / Decimal(1_000_000)).quantize(Decimal("0.00000001")), "price"


def write_record(use: Use, now: datetime | None = None) -> str | None:
    """Write a record, add it to its pools' days and charge its payers, in one transaction;
    why a payer now has no room left, or None."""
    return retried(lambda: _write(use, now or timezone.now()))


def _write(use: Use, now: datetime) -> str | None:
    with transaction.atomic():
        where = where_of(use.work.scope)
        cost, cost_from = priced(use)
        record = UsageRecord.objects.create(
            at=now,
            day=local_day(now, zone_of(settings.AHPD_USAGE_TIMEZONE)),
            user_pool=use.work.person or "nobody",
            team_pool=where.team_pool,
            project_pool=where.project_pool,
            session=use.session,
            chat=use.chat,
            turn=use.turn,
            agent=use.work.agent,
            model=use.work.model or "",
            input_tokens=use.input_tokens,
            output_tokens=use.output_tokens,
            cache_read_tokens=use.cache_read_tokens,
            cache_write_tokens=use.cache_write_tokens,
            cost_usd=cost,
            cost_from=cost_from,
            duration_ms=use.duration_ms,
            payers=list(use.payers),
        )
        add_to_days(record)
        return _charge_record(record, use.payers, now)


def add_to_days(record: UsageRecord) -> None:
    """The record added to each of its pools' day, in the caller's transaction."""
    for pool in record.pools():
        added = {
            "records": F("records") + 1,
            "input_tokens": F("input_tokens") + record.input_tokens,
            "output_tokens": F("output_tokens") + record.output_tokens,
            "cache_read_tokens": F("cache_read_tokens") + record.cache_read_tokens,
            "cache_write_tokens": F("cache_write_tokens") + record.cache_write_tokens,
            "cost_usd": F("cost_usd") + (record.cost_usd or 0),
            "unpriced": F("unpriced") + (1 if record.cost_usd is None else 0),
        }
        if UsageDay.objects.filter(pool=pool, day=record.day).update(**added):
            continue
        try:
            with transaction.atomic():
                UsageDay.objects.create(
                    pool=pool,
                    day=record.day,
                    records=1,
                    input_tokens=record.input_tokens,
                    output_tokens=record.output_tokens,
                    cache_read_tokens=record.cache_read_tokens,
                    cache_write_tokens=record.cache_write_tokens,
                    cost_usd=record.cost_usd or 0,
                    unpriced=1 if record.cost_usd is None else 0,
                )
        except IntegrityError:
            UsageDay.objects.filter(pool=pool, day=record.day).update(**added)


def _charge_record(record: UsageRecord, payer_ids: Iterable[str], now: datetime) -> str | None:
    refusal = None
    for policy in Policy.objects.select_for_update().filter(pk__in=list(payer_ids)).order_by("pk"):
        row = row_of(policy)
        person = record.user_pool
        charge(row, person, "tokens", Decimal(record.tokens), now)
        charge(row, person, "hours", Decimal(record.duration_ms) / Decimal(3_600_000), now)
        if record.cost_usd is not None:
            charge(row, person, "usd", record.cost_usd, now)
        limit = exhausted(row, person, now, starting=False)
        if refusal is None and limit is not None and limit.measure != AT_START:
            refusal = f"{spent_words(row, limit)}: the turn is stopped"
    return refusal
