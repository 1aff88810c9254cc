"""The admin in ahpd's terms, as an attacker would try it too: the running-now page and its
Cancel for who may view sessions only (and Cancel with the person's own grants), CSV export
for who may view the list, a zone cookie that names no zone, the person page with no groups or
permission pickers. The browser's view of the same is tests/e2e/test_admin_in_a_browser.py."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from hosts import store
from hosts.models import Membership, Role
from tests.api import test_admin_live_turns as live
from usage.models import UsageRecord

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()
engine = live.engine

RUNNING_NOW = "admin:hosts_storedsession_running_now"
ROWS = "admin:hosts_storedsession_running_rows"
CANCEL = "admin:hosts_storedsession_running_cancel"


def staff(username: str, *codenames: str, role: str | None = None) -> Client:
    user = User.objects.create(username=username, is_staff=True)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    if role is not None:
        store.ensure_builtin_roles()
        Membership.objects.create(user=user, role=Role.objects.get(name=role))
    browser = Client()
    browser.force_login(user)
    return browser


def record(turn: str, cost: str | None) -> UsageRecord:
    return UsageRecord.objects.create(
        at=datetime(2026, 3, 1, 23, 30, tzinfo=UTC),
        day=date(2026, 3, 1),
        user_pool="user:ada",
        session="ahp-session:/s",
        chat="ahp-chat:/c",
        turn=turn,
        agent="local",
        input_tokens=3,
        output_tokens=4,
        cost_usd=cost,
    )


def test_running_now_lists_the_streaming_turn_and_cancels_it(engine, tmp_path):
    uri, chat, turn_id = live.start_slow_turn(tmp_path)
    live.streaming(chat)
    boss = live.signed_in("boss", superuser=True)
    rows = boss.get(reverse(ROWS))
    assert rows.status_code == 200
    assert "no-store" in rows["Cache-Control"]
    html = rows.content.decode()
    assert f'data-turn="{turn_id}"' in html
    assert "word1" in html and "local" in html
    page = boss.get(reverse(RUNNING_NOW)).content.decode()
    assert reverse(ROWS) in page and turn_id in page

    stopped = boss.post(reverse(CANCEL), {"session": uri}, follow=True)
    assert f"Stopped {turn_id} in {uri} for every client." in stopped.content.decode()
    live.turn_ended(chat)
    assert "No turn is running." in boss.get(reverse(ROWS)).content.decode()


def test_cancel_names_a_missing_session_and_refuses_one_that_runs_nothing(engine):
    boss = live.signed_in("boss", superuser=True)
    missing = boss.post(reverse(CANCEL), {})
    assert missing.status_code == 400
    assert b"session" in missing.content
    nothing = boss.post(reverse(CANCEL), {"session": "ahp-session:/nope"}, follow=True)
    assert "Nothing cancelled: " in nothing.content.decode()
    # A GET changes nothing: it leads back to the page.
    assert boss.get(reverse(CANCEL)).status_code == 302


def test_a_guest_sees_the_running_turn_but_may_not_cancel_it(engine, tmp_path):
    uri, chat, turn_id = live.start_slow_turn(tmp_path)
    live.streaming(chat)
    guest = staff("gus", "view_storedsession", role="guest")
    assert turn_id in guest.get(reverse(ROWS)).content.decode()
    refused = guest.post(reverse(CANCEL), {"session": uri}, follow=True)
    assert "Nothing cancelled: user:gus may not chat:cancel here" in refused.content.decode()
    assert turn_id in guest.get(reverse(ROWS)).content.decode()
    live.api().post("/api/sessions/" + quote(uri, safe="") + "/cancel/")
    live.turn_ended(chat)


def test_running_now_is_for_who_may_view_sessions(engine):
    nobody = staff("nil")
    for name in (RUNNING_NOW, ROWS):
        assert nobody.get(reverse(name)).status_code == 403
    assert nobody.post(reverse(CANCEL), {"session": "ahp-session:/x"}).status_code == 403
    assert Client().get(reverse(ROWS)).status_code == 302  # to the sign-in


def read_csv(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]

    # Streamed from an asynchronous iterator, as daphne reads it.
    async def whole() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    return list(csv.DictReader(io.StringIO(async_to_sync(whole)().decode())))


def test_usage_records_export_every_row_the_filters_keep_in_the_askers_zone():
    record("t1", "0.5")
    record("t2", None)
    viewer = staff("vic", "view_usagerecord")
    viewer.cookies["ahpd_tz"] = "Europe/Berlin"
    url = reverse("admin:usage_usagerecord_csv")
    rows = read_csv(viewer.get(url))
    assert [(r["turn"], r["cost_usd"]) for r in rows] == [("t1", "0.50000000"), ("t2", "")]
    assert rows[0]["at"] == "2026-03-02T00:30:00+01:00"
    assert [r["turn"] for r in read_csv(viewer.get(url + "?q=t2"))] == ["t2"]


def test_csv_export_is_for_who_may_view_the_list():
    record("t1", "0.5")
    assert staff("nil").get(reverse("admin:usage_usagerecord_csv")).status_code == 403
    assert Client().get(reverse("admin:usage_usageday_csv")).status_code == 302


def test_a_zone_cookie_that_names_no_zone_leaves_utc():
    viewer = staff("vic", "view_usagerecord")
    for bad in ("Mars/Olympus", "../../etc/passwd", "x" * 100):
        viewer.cookies["ahpd_tz"] = bad
        page = viewer.get(reverse("admin:usage_usagerecord_changelist"))
        assert page.status_code == 200
        assert "times in UTC" in page.content.decode()


def test_the_person_page_has_no_groups_permissions_or_superuser_tick():
    store.ensure_builtin_roles()
    ada = User.objects.create(username="ada")
    Membership.objects.create(user=ada, role=Role.objects.get(name="member"))
    record("t1", "0.5")
    boss = live.signed_in("boss", superuser=True)
    html = boss.get(reverse("admin:auth_user_change", args=[ada.pk])).content.decode()
    for name in ("groups", "user_permissions", "is_superuser", "is_staff"):
        assert f'name="{name}"' not in html
    assert "member" in html
    index = boss.get(reverse("admin:index")).content.decode()
    assert "/admin/auth/group/" not in index
