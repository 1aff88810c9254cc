"""The ledger: the rollup is the sum of the records, a price makes a cost, and two turn starts
at once cannot both take the last of a budget (one row lock; run on PostgreSQL too)."""

from __future__ import annotations

import json
import random
import threading
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Sum

from hosts.engine.meter import Use, Work
from hosts.models import Project, Team
from usage import ledger
from usage.models import AppendOnly, PolicySpend, UsageDay, UsageRecord
from usage.policy_rows import write_row

FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@pytest.fixture
def checked(settings):
    settings.AHPD_POLICIES_CHECK = True
    settings.AHPD_USAGE_TIMEZONE = "Asia/Tokyo"
    return settings


@pytest.mark.django_db
def test_the_rollup_is_the_sum_of_the_records_after_random_inserts(settings):
    settings.AHPD_USAGE_TIMEZONE = "America/Sao_Paulo"
    alpha = Team.objects.create(slug="alpha")
    Project.objects.create(slug="web", team=alpha)
    chance = random.Random(12)
    start = datetime(2026, 2, 27, tzinfo=UTC)
    for n in range(300):
        work = Work(
            f"user:{chance.choice('abc')}",
            chance.choice(["", "team:alpha", "project:web"]),
            "local",
            chance.choice(["m1", None]),
        )
        use = Use(
            work,
            "ahp-session:/s",
            "ahp-chat:/c",
            f"t{n}",
            input_tokens=chance.randrange(1000),
            output_tokens=chance.randrange(1000),
            cache_read_tokens=chance.randrange(50),
            cost_usd=chance.choice([None, round(chance.random(), 4)]),
        )
        ledger.write_record(use, start + timedelta(minutes=chance.randrange(60 * 24 * 9)))
    pools = set(UsageDay.objects.values_list("pool", flat=True))
    assert pools == {"user:a", "user:b", "user:c", "team:alpha", "project:alpha:web"}
    for record_day in UsageDay.objects.all():
        records = UsageRecord.objects.filter(day=record_day.day).filter(
            **{ledger_field(record_day.pool): record_day.pool}
        )
        sums = records.aggregate(**{f: Sum(f) for f in (*FIGURES, "cost_usd")})
        assert record_day.records == records.count()
        for figure in FIGURES:
            assert getattr(record_day, figure) == (sums[figure] or 0)
        assert record_day.cost_usd == (sums["cost_usd"] or Decimal(0))
        assert record_day.unpriced == records.filter(cost_usd__isnull=True).count()


def ledger_field(pool: str) -> str:
    return {"user": "user_pool", "team": "team_pool", "project": "project_pool"}[
        pool.partition(":")[0]
    ]


@pytest.mark.django_db
def test_a_record_is_never_changed_or_deleted():
    ledger.write_record(Use(Work("user:a", "", "local"), "s", "c", "t", input_tokens=3))
    record = UsageRecord.objects.get()
    record.input_tokens = 1
    with pytest.raises(AppendOnly):
        record.save()
    with pytest.raises(AppendOnly):
        record.delete()


@pytest.mark.django_db
def test_a_model_with_no_price_records_tokens_and_no_cost(tmp_path, settings):
    config = tmp_path / "agents.json"
    agent = {"provider": "local", "kind": "openai", "baseUrl": "http://x", "model": "m"}
    prices = {"cheap-*": {"input": 2, "output": 4}}
    config.write_text(json.dumps({"agents": [{**agent, "prices": prices}]}))
    settings.AHPD_CONFIG = str(config)
    ledger._prices.cache_clear()
    try:
        priced = Use(Work("user:a", "", "local", "cheap-1"), "s", "c", "t1", 500_000, 250_000)
        unpriced = Use(Work("user:a", "", "local", "dear-1"), "s", "c", "t2", 500_000, 250_000)
        ledger.write_record(priced)
        ledger.write_record(unpriced)
    finally:
        ledger._prices.cache_clear()
    first, second = UsageRecord.objects.order_by("pk")
    assert first.cost_usd == Decimal("2") and first.cost_from == "price"
    assert second.cost_usd is None and second.cost_from == "" and second.tokens == 750_000


@pytest.mark.django_db(transaction=True)
def test_concurrent_turn_starts_do_not_overspend_a_budget(checked):
    limits = [{"amount": 3, "measure": "turns", "period": "day", "pool": "shared"}]
    write_row("tight", {"scope": "all", "limits": limits})
    barrier = threading.Barrier(8)
    answers: list[str | None] = []
    lock = threading.Lock()

    def start() -> None:
        try:
            barrier.wait()
            admission = ledger.admit_turn(Work("user:x", "", "local"))
            with lock:
                answers.append(admission.refusal)
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == 8
    assert answers.count(None) == 3
    refusals = [a for a in answers if a is not None]
    assert all(a.startswith("tight has spent 3 turns a day") for a in refusals)
    assert PolicySpend.objects.get(policy_id="tight").amount == 3


@pytest.mark.django_db
def test_an_each_limit_is_every_persons_own(checked):
    limits = [{"amount": 1, "measure": "turns", "period": "week", "pool": "each"}]
    write_row("one-each", {"scope": "all", "limits": limits})
    assert ledger.admit_turn(Work("user:a", "", "local")).payers == ("one-each",)
    assert ledger.admit_turn(Work("user:b", "", "local")).refusal is None
    refused = ledger.admit_turn(Work("user:a", "", "local")).refusal
    assert refused == ("one-each has spent each person's 1 turns a week: agent local is refused")


@pytest.mark.django_db
def test_every_scope_with_an_allow_must_have_room(checked):
    alpha = Team.objects.create(slug="alpha")
    Project.objects.create(slug="web", team=alpha)
    write_row("everyone", {"scope": "all"})
    spent = [{"amount": 0, "measure": "usd", "period": "month", "pool": "shared"}]
    write_row("web-budget", {"scope": "project:alpha:web", "limits": spent})
    # Outside the project the team's budget is no candidate; inside it, it binds.
    assert ledger.admit_turn(Work("user:a", "team:alpha", "local")).refusal is None
    refused = ledger.admit_turn(Work("user:a", "project:web", "local")).refusal
    assert refused is not None and refused.startswith("web-budget has spent 0 usd a month")


@pytest.mark.django_db
def test_root_and_owner_less_work_are_never_checked(checked):
    assert ledger.admit_turn(Work("root:ahpd", "", "local")).refusal is None
    assert ledger.admit_turn(Work("", "", "local")).refusal is None
    assert ledger.admit_turn(Work("user:a", "", "local")).refusal == "no policy allows agent local"


#: Sunday 1 March 2026, 17:00 in Los Angeles: already Monday 01:00 in UTC.
SUNDAY_EVENING_LA = datetime(2026, 3, 2, 1, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_a_records_day_and_a_week_limit_are_cut_in_the_usage_zone(checked):
    checked.AHPD_USAGE_TIMEZONE = "America/Los_Angeles"
    limits = [{"amount": 1, "measure": "turns", "period": "week", "pool": "shared"}]
    write_row("weekly", {"scope": "all", "limits": limits})
    work = Work("user:a", "", "local")
    # Sunday 15:00 there (23:00 UTC, a Sunday too): the week's one turn.
    assert ledger.admit_turn(work, SUNDAY_EVENING_LA - timedelta(hours=2)).refusal is None
    # Sunday 17:00 there is Monday in UTC, a new week there: still this week here.
    refused = ledger.admit_turn(work, SUNDAY_EVENING_LA).refusal
    assert refused == "weekly has spent 1 turns a week: agent local is refused"
    ledger.write_record(Use(work, "s", "c", "t", input_tokens=5), SUNDAY_EVENING_LA)
    record = UsageRecord.objects.get()
    assert record.day == datetime(2026, 3, 1).date()
    assert UsageDay.objects.get(pool="user:a").day == record.day
    # Monday 00:00 there: the week starts again.
    monday = SUNDAY_EVENING_LA + timedelta(hours=7)
    assert ledger.admit_turn(work, monday - timedelta(seconds=1)).refusal == refused
    assert ledger.admit_turn(work, monday).refusal is None
    starts = sorted(PolicySpend.objects.values_list("start", flat=True))
    assert [d.isoformat() for d in starts] == ["2026-02-23", "2026-03-02"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("order", "payer"),
    [("extra", "late-start"), ("ending", "early-start"), ("regular", "regular")],
)
def test_the_pay_order_setting_chooses_which_row_of_a_scope_pays(checked, order, payer):
    checked.AHPD_POLICIES_PAY_ORDER = order
    turns = [{"amount": 5, "measure": "turns", "period": "month", "pool": "shared"}]
    # Made first, valid from later: "the newest from first" is the later `from`, not the
    # row made last.
    write_row(
        "late-start",
        {"scope": "all", "limits": turns, "from": "2026-03-10", "until": "2026-05-31"},
    )
    write_row(
        "early-start",
        {"scope": "all", "limits": turns, "from": "2026-03-01", "until": "2026-04-30"},
    )
    write_row("regular", {"scope": "all", "limits": turns})
    now = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
    assert ledger.admit_turn(Work("user:a", "", "local"), now).payers == (payer,)
    assert PolicySpend.objects.get().policy_id == payer


@pytest.mark.django_db
def test_a_spent_extra_row_passes_the_turn_to_the_next_in_pay_order(checked):
    checked.AHPD_POLICIES_PAY_ORDER = "extra"
    one = [{"amount": 1, "measure": "turns", "period": "total", "pool": "shared"}]
    write_row("newer", {"scope": "all", "limits": one, "from": "2026-03-10", "until": "2026-12-31"})
    write_row("older", {"scope": "all", "limits": one, "from": "2026-03-01", "until": "2026-12-31"})
    now = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
    work = Work("user:a", "", "local")
    assert [ledger.admit_turn(work, now).payers for _ in range(2)] == [("newer",), ("older",)]
    refused = ledger.admit_turn(work, now).refusal
    assert refused == "newer has spent 1 turns in total: agent local is refused"


@pytest.mark.django_db
def test_a_money_budget_admits_while_anything_is_left_and_a_turn_may_overspend_it(checked):
    """Dollars and tokens are not known before a turn runs: a turn is admitted while its row
    has spent less than its amount, and what an admitted turn spends is charged whole."""
    usd = [{"amount": 1, "measure": "usd", "period": "day", "pool": "shared"}]
    write_row("dollar", {"scope": "all", "limits": usd})
    work = Work("user:a", "", "local")
    first, second = ledger.admit_turn(work), ledger.admit_turn(work)
    assert first.refusal is None and second.refusal is None  # both while $0 of $1 is spent
    said = ledger.write_record(Use(work, "s", "c", "t1", cost_usd=0.75, payers=first.payers))
    assert said is None
    said = ledger.write_record(Use(work, "s", "c", "t2", cost_usd=0.75, payers=second.payers))
    assert said == "dollar has spent 1 usd a day: the turn is stopped"
    assert PolicySpend.objects.get(measure="usd").amount == Decimal("1.5")
    refused = ledger.admit_turn(work).refusal
    assert refused == "dollar has spent 1 usd a day: agent local is refused"
