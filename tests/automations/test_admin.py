"""The admin's automation pages: made and changed through the engine as the person signed in
(a refusal said on the page, nothing kept), runs read-only with a link to their session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from automations.models import Automation, AutomationRun
from tests.api.test_api_session_work import api, engine  # noqa: F401 (a fixture)
from tests.automations.test_rest import definition, runs_settled
from usage.models import UsageRecord

pytestmark = pytest.mark.django_db(transaction=True)


def superuser() -> Client:
    user = get_user_model().objects.create(username="root", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(user)
    return browser


def test_an_automation_made_in_the_admin_is_the_engines(engine, tmp_path: Path):  # noqa: F811
    browser = superuser()
    add = reverse("admin:automations_automation_add")
    assert browser.get(add).status_code == 200
    sent = browser.post(
        add, {"uri": "ahp-automation:/admin-made", "definition": json.dumps(definition(tmp_path))}
    )
    assert sent.status_code == 302
    row = Automation.objects.get()
    assert row.uri == "ahp-automation:/admin-made" and row.owner == "user:root"
    # The catalogue was told: the engine holds it and runs it.
    ran = api().post("/api/automations/admin-made/run/", {}, format="json")
    assert ran.status_code == 202
    runs_settled()
    run = AutomationRun.objects.get()
    page = browser.get(reverse("admin:automations_automationrun_change", args=[quote(run.uri)]))
    assert page.status_code == 200
    session_page = reverse("admin:hosts_storedsession_change", args=[quote(run.primary_session)])
    assert session_page in page.content.decode()
    # What its session used, summed from the usage records.
    records = UsageRecord.objects.filter(session=run.primary_session)
    tokens = sum(r.tokens for r in records)
    assert tokens > 0 and f"{tokens} tokens (" in page.content.decode()
    assert browser.get(reverse("admin:automations_automationrun_add")).status_code == 403


def test_a_definition_the_engine_refuses_is_said_and_not_kept(engine, tmp_path: Path):  # noqa: F811
    browser = superuser()
    bad = definition(tmp_path, triggers=[{"id": "x", "kind": "schedule", "schedule": {}}])
    sent = browser.post(
        reverse("admin:automations_automation_add"), {"definition": json.dumps(bad)}, follow=True
    )
    assert "Not kept: triggers: x: schedule.expression must be a string" in sent.content.decode()
    assert Automation.objects.count() == 0
