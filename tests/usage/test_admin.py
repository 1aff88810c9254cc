"""The usage admin: records filtered, a pool's chart drawn, policy rows checked on save."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from hosts.engine.meter import Use, Work
from hosts.models import Project, Team
from usage import ledger
from usage.models import Policy

pytestmark = pytest.mark.django_db


@pytest.fixture
def boss(client: Client) -> Client:
    user = get_user_model().objects.create(username="boss", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


@pytest.fixture
def records() -> None:
    for person, agent in (("user:a", "local"), ("user:b", "claude"), ("user:a", "claude")):
        use = Use(Work(person, "", agent, "m1"), "s", "c", "t", 10, 5, cost_usd=0.25)
        ledger.write_record(use)


def test_the_records_are_filtered_by_person_and_agent(boss: Client, records: None):
    url = reverse("admin:usage_usagerecord_changelist")
    page = boss.get(url, {"user_pool": "user:a", "agent": "claude"})
    assert page.status_code == 200
    assert page.context["cl"].result_count == 1
    assert boss.get(url, {"model": "m1"}).context["cl"].result_count == 3
    assert boss.get(reverse("admin:usage_usagerecord_add")).status_code == 403


def test_a_pools_days_come_with_a_chart_of_the_last_30(boss: Client, records: None):
    page = boss.get(reverse("admin:usage_usageday_changelist"), {"pool__exact": "user:a"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "<svg" in html and "user:a: dollars a day" in html
    assert html.count("<rect") == 30
    assert "$0.5000" in html  # today: two records of a quarter


def test_a_policy_row_is_checked_as_the_scheme_checks_it(boss: Client):
    url = reverse("admin:usage_policy_add")
    row = {
        "id": "p1",
        "scope": "planet:x",
        "kind": "agent",
        "effect": "allow",
        "match": "{}",
        "limits": "[]",
        "pool": "",
    }
    page = boss.post(url, row)
    assert page.status_code == 200 and "scope must be all" in page.content.decode()
    page = boss.post(url, {**row, "scope": "all", "match": '{"agent": "local"}'})
    assert page.status_code == 302
    assert Policy.objects.get(pk="p1").match == {"agent": ["local"]}


def test_the_records_are_filtered_by_team_project_and_date(boss: Client, settings):
    settings.AHPD_USAGE_TIMEZONE = "UTC"
    alpha = Team.objects.create(slug="alpha")
    Project.objects.create(slug="web", team=alpha)
    march = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    for scope, at in (
        ("team:alpha", march),
        ("project:web", march),
        ("project:web", march + timedelta(days=3)),
        ("", march),
    ):
        ledger.write_record(Use(Work("user:a", scope, "local"), "s", "c", "t", 1), at)
    url = reverse("admin:usage_usagerecord_changelist")

    def count(**query: str) -> int:
        page = boss.get(url, query)
        assert page.status_code == 200
        return int(page.context["cl"].result_count)

    assert count(team_pool="team:alpha") == 3  # a project's records are its team's too
    assert count(project_pool="project:alpha:web") == 2
    assert count(day__gte="2026-03-13", day__lt="2026-03-14") == 1
    assert count(at__year="2026", at__month="3", at__day="10") == 3
    assert count(project_pool="project:alpha:web", day__gte="2026-03-11") == 1
