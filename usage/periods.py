"""Where days, weeks and months are cut: in AHPD_USAGE_TIMEZONE, a week from Monday 00:00.

Pure Python (no Django), so the settings file can check a zone with it and tests can cut
periods in any zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

#: The first day a `total` limit counts from: every record is after it.
EPOCH = date(1970, 1, 1)

PERIODS = ("day", "week", "month", "total")


def zone_known(name: str) -> bool:
    """Whether `name` is an IANA zone this host can read."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def zone_of(name: str) -> tzinfo:
    """The zone named, or the system's own for an empty name."""
    if name:
        return ZoneInfo(name)
    local = datetime.now().astimezone().tzinfo
    return local if local is not None else UTC


def local_day(at: datetime, zone: tzinfo) -> date:
    """The day an instant falls on in `zone`."""
    return at.astimezone(zone).date()


def period_start(period: str, day: date) -> date:
    """The first day of the period (day, week from Monday, month, total) holding `day`."""
    if period == "day":
        return day
    if period == "week":
        return day - timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    if period == "total":
        return EPOCH
    raise ValueError(f"unknown period {period!r}")


@dataclass(frozen=True, slots=True)
class Periods:
    """The first day of today's day, week and month in one zone."""

    today: date
    week: date
    month: date

    @classmethod
    def at(cls, now: datetime, zone: tzinfo) -> Periods:
        today = local_day(now, zone)
        return cls(today, period_start("week", today), period_start("month", today))
