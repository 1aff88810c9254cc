"""The claim of due runs in the database: one run per due time whoever claims it, on SQLite
and PostgreSQL alike; and runs a stop left unfinished read back as failed."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections

from automations.models import Automation, AutomationRun
from automations.store import (
    add_run_row,
    apply_plan,
    automation_record,
    claim_due,
    fail_unfinished,
    take_runs,
)
from hosts.engine.automations.schedule import iso_or_none, plan

NOW = datetime(2027, 1, 4, 9, 0, 3, tzinfo=UTC)


def kept(uri: str = "ahp-automation:/a", **definition: object) -> Automation:
    trigger = {
        "id": "t",
        "kind": "schedule",
        "schedule": {"expression": "0 9 * * *", "timeZone": "Europe/Berlin"},
    }
    return Automation.objects.create(
        uri=uri,
        definition={"title": "a", "enabled": True, "triggers": [trigger], **definition},
        owner="root:test",
        created_ms=0,
        modified_ms=0,
        cursors={"t": iso_or_none(NOW - timedelta(hours=2))},
    )


@pytest.mark.django_db
def test_two_claimers_reading_before_either_wrote_make_one_run():
    kept(
        triggers=[
            {
                "id": "t",
                "kind": "schedule",
                "schedule": {"expression": "0 8 * * *", "timeZone": "UTC"},
            }
        ]
    )
    record = automation_record(Automation.objects.get())
    due = plan(record, NOW.replace(hour=8))
    assert len(due.claims) == 1
    first = apply_plan(record["uri"], due, NOW.replace(hour=8))
    second = apply_plan(record["uri"], due, NOW.replace(hour=8))
    assert len(first) == 1 and second == []
    assert AutomationRun.objects.count() == 1


@pytest.mark.django_db
def test_claiming_again_at_the_same_instant_claims_nothing_more():
    kept(disableConditions=[{"kind": "afterRuns", "max": 3}])
    at = NOW.replace(hour=8)  # 09:00 in Berlin
    assert [len(runs) for _, runs in claim_due(at)] == [1]
    assert claim_due(at) == []
    run = AutomationRun.objects.get()
    assert run.origin_kind == "trigger" and run.scheduled_for == at.replace(second=0)
    assert Automation.objects.get().run_count == 1


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL"),
    reason="the test run's SQLite is shared-cache memory: a second writer fails at once",
)
@pytest.mark.django_db(transaction=True)
def test_two_claimers_racing_on_threads_make_one_run():
    kept()
    at = NOW.replace(hour=8)
    barrier = threading.Barrier(2)
    got: list[int] = []

    def claimer() -> None:
        barrier.wait()
        try:
            got.append(sum(len(runs) for _, runs in claim_due(at)))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claimer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(got) == [0, 1]
    assert AutomationRun.objects.count() == 1


@pytest.mark.django_db
def test_a_run_asked_again_under_its_request_is_the_same_run():
    kept()
    run = {
        "uri": "ahp-automation-run:/one",
        "automation": "ahp-automation:/a",
        "owner": "root:test",
        "origin": {"kind": "manual"},
        "lifecycle": {"status": "pending", "createdAt": "2027-01-04T09:00:00.000Z"},
        "sessions": [],
        "request_id": "press",
    }
    assert add_run_row(run)["uri"] == "ahp-automation-run:/one"
    again = add_run_row({**run, "uri": "ahp-automation-run:/two"})
    assert again["uri"] == "ahp-automation-run:/one"
    assert AutomationRun.objects.count() == 1


@pytest.mark.django_db
def test_runs_a_stop_left_unfinished_read_back_as_failed_with_a_reason():
    automation = kept()
    for status, uri in (("pending", "p"), ("running", "r"), ("completed", "c")):
        lifecycle = {"status": status, "createdAt": "2027-01-04T09:00:00.000Z"}
        if status != "pending":
            lifecycle["startedAt"] = "2027-01-04T09:00:01.000Z"
        if status == "completed":
            lifecycle["completedAt"] = "2027-01-04T09:00:02.000Z"
        AutomationRun.objects.create(
            uri=f"ahp-automation-run:/{uri}",
            automation=automation,
            origin_kind="manual",
            status=status,
            lifecycle=lifecycle,
            created_ms=0,
        )
    assert fail_unfinished("stopped", (), True) == [automation.uri]
    failed = {r.uri: r.lifecycle for r in AutomationRun.objects.filter(status="failed")}
    assert set(failed) == {"ahp-automation-run:/p", "ahp-automation-run:/r"}
    assert failed["ahp-automation-run:/r"]["startedAt"] == "2027-01-04T09:00:01.000Z"
    assert failed["ahp-automation-run:/p"]["error"]["message"] == "stopped (pending)"
    assert AutomationRun.objects.get(uri="ahp-automation-run:/c").status == "completed"


@pytest.mark.django_db
def test_a_node_fails_only_its_own_runs_and_those_of_nodes_gone():
    """Several nodes: a node starting fails what it left unfinished and what nodes no longer
    live left, never a live node's run; a Celery-claimed run no node took yet is left while
    another node may be taking it. Each is failed once, whoever else fails it."""
    automation = kept()
    for uri, node in (("mine", "a"), ("live", "b"), ("gone", "c"), ("untaken", "")):
        AutomationRun.objects.create(
            uri=f"ahp-automation-run:/{uri}",
            automation=automation,
            origin_kind="manual",
            status="running",
            lifecycle={"status": "running", "createdAt": "2027-01-04T09:00:00.000Z"},
            created_ms=0,
            node=node,
        )
    # Node a starts while b is live.
    assert fail_unfinished("stopped", ("b",), False) == [automation.uri]
    failed = set(AutomationRun.objects.filter(status="failed").values_list("node", flat=True))
    assert failed == {"a", "c"}
    # Failed again by another node: nothing moves.
    assert fail_unfinished("stopped", ("b",), False) == []
    take_runs(["ahp-automation-run:/untaken", "ahp-automation-run:/live"], "a")
    assert AutomationRun.objects.get(uri="ahp-automation-run:/untaken").node == "a"
    assert AutomationRun.objects.get(uri="ahp-automation-run:/live").node == "b"
