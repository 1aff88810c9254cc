"""When schedules are due, with the clock in the test's hands: cron in two zones across their
daylight-saving changes, catch-up under both misfire policies, afterRuns and afterDate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hosts.engine.automations import cron
from hosts.engine.automations.definitions import conditions_problem
from hosts.engine.automations.schedule import GRACE, iso_or_none, plan


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def record(
    expression: str = "0 9 * * *",
    zone: str = "UTC",
    cursor: datetime | None = None,
    policy: str | None = None,
    **definition: Any,
) -> dict[str, Any]:
    trigger: dict[str, Any] = {
        "id": "t",
        "kind": "schedule",
        "schedule": {"expression": expression, "timeZone": zone},
    }
    if policy is not None:
        trigger["misfirePolicy"] = policy
    return {
        "uri": "ahp-automation:/a",
        "definition": {"enabled": True, "triggers": [trigger], **definition},
        "cursors": {"t": iso_or_none(cursor)} if cursor else {},
        "run_count": 0,
    }


def test_nine_in_berlin_moves_an_hour_in_utc_across_the_spring_change():
    fired = cron.due_between("0 9 * * *", "Europe/Berlin", utc(2026, 3, 27), utc(2026, 3, 31))
    assert fired == [
        utc(2026, 3, 27, 8),
        utc(2026, 3, 28, 8),
        utc(2026, 3, 29, 7),
        utc(2026, 3, 30, 7),
    ]


def test_nine_in_new_york_moves_an_hour_in_utc_across_its_own_change():
    fired = cron.due_between("0 9 * * *", "America/New_York", utc(2026, 3, 7), utc(2026, 3, 10))
    assert fired == [utc(2026, 3, 7, 14), utc(2026, 3, 8, 13), utc(2026, 3, 9, 13)]


def test_a_time_skipped_by_the_spring_change_fires_once_at_the_next_valid_minute():
    fired = cron.due_between(
        "30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), utc(2026, 3, 30, 12)
    )
    # 02:30 does not exist on 29 March: 03:00 CEST (01:00 UTC) instead, once.
    assert fired == [utc(2026, 3, 29, 1), utc(2026, 3, 30, 0, 30)]


def test_a_time_that_happens_twice_in_the_autumn_fires_once():
    fired = cron.due_between(
        "30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12), utc(2026, 10, 26, 12)
    )
    assert fired == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]
    again = cron.due_between(
        "30 1 * * *", "America/New_York", utc(2026, 10, 31, 12), utc(2026, 11, 2, 12)
    )
    assert again == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_lists_ranges_steps_and_names_are_read_and_both_sundays_are_sunday():
    weekdays = cron.due_between("0 9 * JAN mon-FRI", "UTC", utc(2027, 1, 1), utc(2027, 1, 8))
    assert [d.day for d in weekdays] == [1, 4, 5, 6, 7]
    steps = cron.due_between("*/20 8-9 1,15 * *", "UTC", utc(2027, 1, 1), utc(2027, 1, 2))
    assert [(d.hour, d.minute) for d in steps] == [
        (8, 0),
        (8, 20),
        (8, 40),
        (9, 0),
        (9, 20),
        (9, 40),
    ]
    assert cron.due_between("0 0 * * 0", "UTC", utc(2027, 1, 1), utc(2027, 1, 11)) == (
        cron.due_between("0 0 * * 7", "UTC", utc(2027, 1, 1), utc(2027, 1, 11))
    )


@pytest.mark.parametrize(
    "expression",
    ["@daily", "0 0 9 * * *", "0 9 L * *", "0 9 * * 1#2", "0 9 ? * *", "*/0 * * * *", "61 * * * *"],
)
def test_what_the_protocol_does_not_declare_is_refused(expression):
    assert cron.problem(expression, "UTC") is not None


def test_a_zone_that_is_not_iana_is_refused():
    assert "IANA" in str(cron.problem("0 9 * * *", "Europe/Atlantis"))


def test_an_occurrence_on_time_is_claimed_and_not_marked_catch_up():
    now = utc(2027, 1, 1, 9, 0, 5)
    due = plan(record(cursor=utc(2027, 1, 1, 8, 59)), now)
    assert [(c.scheduled_for, c.catch_up) for c in due.claims] == [(utc(2027, 1, 1, 9), False)]
    assert due.next_run_at == utc(2027, 1, 2, 9)


def test_downtime_over_due_times_is_caught_up_once_under_run_once():
    now = utc(2027, 1, 5, 12)  # down since the 1st: four 09:00s missed
    due = plan(record(cursor=utc(2027, 1, 1, 8), policy="runOnce"), now)
    assert [(c.scheduled_for, c.catch_up) for c in due.claims] == [(utc(2027, 1, 5, 9), True)]
    assert plan(record(cursor=utc(2027, 1, 1, 8)), now).claims == due.claims  # the default
    # Evaluated: asked again, nothing more is due.
    after = plan({**record(policy="runOnce"), "cursors": due.cursors}, now)
    assert after.claims == []


def test_downtime_over_due_times_runs_nothing_under_skip():
    due = plan(record(cursor=utc(2027, 1, 1, 8), policy="skip"), utc(2027, 1, 5, 12))
    assert due.claims == []
    assert due.cursors["t"] == iso_or_none(utc(2027, 1, 5, 9))
    assert due.next_run_at == utc(2027, 1, 6, 9)


def test_skip_still_fires_an_occurrence_on_time():
    now = utc(2027, 1, 1, 9) + GRACE - timedelta(seconds=1)
    assert len(plan(record(cursor=utc(2027, 1, 1, 8), policy="skip"), now).claims) == 1


def test_after_runs_switches_the_automation_off_once_the_allowance_is_used():
    conditions = [{"kind": "afterRuns", "max": 2}]
    kept = record("* * * * *", cursor=utc(2027, 1, 1, 9), disableConditions=conditions)
    first = plan(kept, utc(2027, 1, 1, 9, 1, 1))
    assert len(first.claims) == 1 and first.run_count == 1 and first.enabled
    kept = {**kept, "cursors": first.cursors, "run_count": first.run_count}
    second = plan(kept, utc(2027, 1, 1, 9, 2, 1))
    assert len(second.claims) == 1 and second.run_count == 2 and second.enabled is False
    assert second.next_run_at is None


def test_after_date_switches_it_off_and_claims_nothing_past_the_date():
    conditions = [{"kind": "afterDate", "date": "2027-01-01T09:30:00Z"}]
    kept = record("*/10 * * * *", cursor=utc(2027, 1, 1, 9, 25), disableConditions=conditions)
    assert len(plan(kept, utc(2027, 1, 1, 9, 20, 1) + timedelta(minutes=10)).claims) == 0
    past = plan(kept, utc(2027, 1, 1, 9, 31))
    assert past.claims == [] and past.enabled is False


def test_a_switched_off_automation_is_not_due():
    kept = record("* * * * *", cursor=utc(2027, 1, 1, 9))
    kept["definition"]["enabled"] = False
    assert plan(kept, utc(2027, 1, 1, 10)).claims == []


def test_an_after_date_that_is_not_a_timestamp_is_refused_naming_it():
    assert "not an ISO 8601" in str(conditions_problem([{"kind": "afterDate", "date": "soon"}]))
