"""When a schedule trigger is due: AHP's five-field cron, read in an IANA time zone.

croniter does the cron arithmetic on zone-aware datetimes from `zoneinfo`, so a day that
springs forward and one that falls back are walked in real time. Two rules of the protocol
are laid over it: a wall time that does not exist that day (skipped by the change) fires once
at the next valid minute, which croniter does already; and a wall time that happens twice
(the hour repeated by the change) fires once, the first time, for an expression that names
its hours. Only the grammar AHP declares is taken: no seconds, no years, no `@daily`, no
Quartz `?`, `L`, `W`, `#`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

#: What a field may hold beyond digits and names: `*`, ranges, lists and steps.
_FIELD = re.compile(r"^[0-9A-Za-z*,/-]+$")
_MONTHS = frozenset("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())
_DAYS = frozenset("SUN MON TUE WED THU FRI SAT".split())
#: The names each field may use, by position (minute, hour, day of month, month, weekday).
_NAMES: tuple[frozenset[str], ...] = (frozenset(), frozenset(), frozenset(), _MONTHS, _DAYS)


def _names_ok(position: int, field: str) -> bool:
    return all(name.upper() in _NAMES[position] for name in re.findall(r"[A-Za-z]+", field))


def problem(expression: object, time_zone: object) -> str | None:
    """Why a schedule cannot be kept (its expression or its zone), or None."""
    if not isinstance(expression, str):
        return "schedule.expression must be a string"
    fields = expression.split()
    if len(fields) != 5:
        return f"schedule.expression must have exactly five fields, not {expression!r}"
    if not all(
        _FIELD.match(field) and _names_ok(n, field) for n, field in enumerate(fields)
    ) or not croniter.is_valid(expression):
        return f"schedule.expression is not a five-field cron expression: {expression!r}"
    if not isinstance(time_zone, str) or not time_zone:
        return "schedule.timeZone must be an IANA time zone name"
    try:
        ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        return f"schedule.timeZone is not an IANA time zone: {time_zone!r}"
    return None


def _repeated(at: datetime) -> bool:
    """Whether `at` is the second of two instants with the same wall time (a fall back)."""
    return at.replace(fold=0).utcoffset() != at.utcoffset()


def occurrences(expression: str, time_zone: str, after: datetime) -> Iterator[datetime]:
    """Every instant the schedule fires strictly after `after`, in UTC, in order, forever."""
    zone = ZoneInfo(time_zone)
    names_hours = expression.split()[1] != "*"
    walker = croniter(expression, after.astimezone(zone))
    while True:
        at: datetime = walker.get_next(datetime)
        if names_hours and _repeated(at):
            continue
        yield at.astimezone(UTC)


def next_after(expression: str, time_zone: str, after: datetime) -> datetime:
    """The first instant the schedule fires strictly after `after`, in UTC."""
    return next(occurrences(expression, time_zone, after))


def due_between(
    expression: str, time_zone: str, after: datetime, until: datetime, limit: int = 1000
) -> list[datetime]:
    """The instants in (after, until], oldest first, at most `limit` (the newest kept)."""
    found: list[datetime] = []
    for at in occurrences(expression, time_zone, after):
        if at > until:
            break
        found.append(at)
        if len(found) > limit:
            found.pop(0)
    return found
