"""Usage reads against a million records: a month's totals for one pool and `usage://groups`
for every pool, from the daily rollup, beside a plain SUM (and GROUP BY) over the records
themselves, timed in the same run on the same database.

A fresh SQLite data directory (or DATABASE_URL's database, when set) is migrated; a million
records over 60 days, 200 people, 10 teams and 40 projects are bulk-inserted with the rollup
the meter would have kept for them; 2,000 more are written one by one through the meter's own
transaction (usage/ledger.write_record) to show what a write costs. Prints median times and
the ratio rollup / plain SUM.

Usage: python bench/usage.py [--records 1000000] [--calls 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def median_ms(work: Any, calls: int) -> float:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="ahpd-bench-usage-")
    os.environ.setdefault("AHPD_DATA_DIR", folder)
    os.environ.setdefault("AHPD_ENV_FILE", os.devnull)
    os.environ.setdefault("AHPD_USAGE_TIMEZONE", "UTC")
    os.environ["DJANGO_SETTINGS_MODULE"] = "ahpsite.settings"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Q, Sum

    from hosts.engine.meter import Use, Work
    from usage import ledger, reading
    from usage.models import UsageDay, UsageRecord

    call_command("migrate", verbosity=0)
    UsageRecord.objects.all()._raw_delete(UsageRecord.objects.db)  # a rerun on DATABASE_URL
    UsageDay.objects.all().delete()
    chance = random.Random(7)
    today = date.today()
    first = today - timedelta(days=59)
    days: dict[tuple[str, date], list[Any]] = defaultdict(lambda: [0, 0, 0, Decimal(0)])
    started = time.perf_counter()
    batch: list[UsageRecord] = []
    for n in range(args.records):
        person = chance.randrange(200)
        team = person % 10
        day = first + timedelta(days=chance.randrange(60))
        cost = Decimal(chance.randrange(1, 10_000)) / Decimal(10_000)
        record = UsageRecord(
            at=datetime.combine(day, datetime.min.time(), UTC),
            day=day,
            user_pool=f"user:p{person}",
            team_pool=f"team:t{team}",
            project_pool=f"project:t{team}:w{person % 40}",
            session="ahp-session:/bench",
            chat="ahp-chat:/bench",
            turn=f"t{n}",
            agent="local",
            model="m",
            input_tokens=chance.randrange(5000),
            output_tokens=chance.randrange(2000),
            cost_usd=cost,
            cost_from="price",
        )
        batch.append(record)
        for pool in record.pools():
            kept = days[pool, day]
            kept[0] += 1
            kept[1] += record.input_tokens
            kept[2] += record.output_tokens
            kept[3] += cost
        if len(batch) == 20_000:
            UsageRecord.objects.bulk_create(batch)
            batch = []
    UsageRecord.objects.bulk_create(batch)
    UsageDay.objects.bulk_create(
        [
            UsageDay(
                pool=p, day=d, records=v[0], input_tokens=v[1], output_tokens=v[2], cost_usd=v[3]
            )
            for (p, d), v in days.items()
        ],
        batch_size=5000,
    )
    inserted_s = time.perf_counter() - started
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("ANALYZE")
        else:
            cursor.execute("ANALYZE usage_usagerecord")
            cursor.execute("ANALYZE usage_usageday")

    month = today.replace(day=1)
    pool = "team:t3"

    def rollup_month() -> Any:
        return reading.total(pool, month, today)

    def plain_month() -> Any:
        rows = UsageRecord.objects.filter(Q(team_pool=pool), day__gte=month, day__lte=today)
        return rows.aggregate(Sum("input_tokens"), Sum("output_tokens"), Sum("cost_usd"))

    class Operator:
        ref = "root:bench"
        scoped: dict[str, Any] = {}

        def may(self, needed: str) -> bool:
            return True

    def rollup_groups() -> Any:
        return reading.groups_json(Operator(), "user", first.isoformat(), today.isoformat())  # type: ignore[arg-type]

    def plain_groups() -> Any:
        rows = UsageRecord.objects.filter(day__gte=first, day__lte=today)
        return list(
            rows.values("user_pool")
            .order_by("user_pool")
            .annotate(Sum("input_tokens"), Sum("output_tokens"), Sum("cost_usd"))
        )

    assert rollup_month()["inputTokens"] == plain_month()["input_tokens__sum"]
    assert len(rollup_groups()["groups"]) == len(plain_groups())
    timings = {
        "month, one pool: rollup": median_ms(rollup_month, args.calls),
        "month, one pool: plain SUM over records": median_ms(plain_month, args.calls),
        "usage://groups?by=user (60 days): rollup": median_ms(rollup_groups, args.calls),
        "groups: plain GROUP BY over records": median_ms(plain_groups, args.calls),
    }
    writes = 2000
    started = time.perf_counter()
    for n in range(writes):
        use = Use(Work(f"user:p{n % 200}", "", "local", "m"), "s", "c", f"w{n}", 100, 50)
        ledger.write_record(use)
    write_ms = (time.perf_counter() - started) * 1000 / writes

    print(f"database: {connection.vendor}; {args.records:,} records inserted in {inserted_s:.0f} s")
    for name, ms in timings.items():
        print(f"  {name}: {ms:.2f} ms")
    month_ratio = (
        timings["month, one pool: rollup"] / timings["month, one pool: plain SUM over records"]
    )
    groups_ratio = (
        timings["usage://groups?by=user (60 days): rollup"]
        / timings["groups: plain GROUP BY over records"]
    )
    print(f"  ratio rollup / plain, a month of one pool: {month_ratio:.4f}")
    print(f"  ratio rollup / plain, groups by user: {groups_ratio:.4f}")
    print(
        f"  a record written through the meter (record + 3 pool days, one transaction): "
        f"{write_ms:.2f} ms"
    )


if __name__ == "__main__":
    main()
