"""Periods are cut in the configured zone: one instant is two days in two zones, and a week
starts on that zone's Monday 00:00."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from usage.periods import EPOCH, Periods, local_day, period_start, zone_known

TOKYO = ZoneInfo("Asia/Tokyo")
SAO_PAULO = ZoneInfo("America/Sao_Paulo")


def test_one_instant_is_a_monday_in_tokyo_and_a_sunday_in_sao_paulo():
    # 2026-03-01 is a Sunday: 20:00 UTC is Monday 05:00 in Tokyo, Sunday 17:00 in São Paulo.
    at = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
    assert local_day(at, TOKYO) == date(2026, 3, 2)
    assert local_day(at, SAO_PAULO) == date(2026, 3, 1)
    tokyo, sao_paulo = Periods.at(at, TOKYO), Periods.at(at, SAO_PAULO)
    assert tokyo.week == date(2026, 3, 2)  # a new week has begun there
    assert sao_paulo.week == date(2026, 2, 23)  # not yet here
    assert tokyo.month == date(2026, 3, 1) and sao_paulo.month == date(2026, 3, 1)


def test_a_week_starts_at_monday_midnight_in_its_zone():
    sunday_late = datetime(2026, 3, 1, 23, 59, 59, tzinfo=TOKYO)
    monday = datetime(2026, 3, 2, 0, 0, tzinfo=TOKYO)
    assert Periods.at(sunday_late, TOKYO).week == date(2026, 2, 23)
    assert Periods.at(monday, TOKYO).week == date(2026, 3, 2)


def test_a_month_boundary_falls_where_the_zone_says():
    at = datetime(2026, 4, 30, 23, 30, tzinfo=UTC)
    assert Periods.at(at, TOKYO).month == date(2026, 5, 1)
    assert Periods.at(at, SAO_PAULO).month == date(2026, 4, 1)


def test_period_starts():
    day = date(2026, 12, 3)  # a Thursday
    assert period_start("day", day) == day
    assert period_start("week", day) == date(2026, 11, 30)
    assert period_start("month", day) == date(2026, 12, 1)
    assert period_start("total", day) == EPOCH
    with pytest.raises(ValueError):
        period_start("year", day)


def test_a_zone_the_host_cannot_read_is_not_known():
    assert zone_known("Europe/Berlin")
    assert not zone_known("Mars/Olympus_Mons")
    assert not zone_known("../etc")
