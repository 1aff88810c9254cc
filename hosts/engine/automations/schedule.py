"""Which scheduled runs are due for one automation at an instant, and what it reads after.

Pure: the store reads an automation, asks `plan`, and applies the plan in one transaction,
claiming each run under a unique (automation, trigger, scheduled time) key so that two
claimers working from the same reading make one run. Each schedule trigger has a cursor, the
last occurrence evaluated; a trigger with none (new, or the automation switched back on)
starts from now, so nothing is fired for the time before it existed.

An occurrence is on time when it is at most GRACE old. A trigger whose newest due occurrence
is older (the server or the scheduler was down over it) is caught up once under runOnce, the
run marked catchUp, or not at all under skip; either way the missed ones are evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from . import cron
from .definitions import after_date, after_runs, schedule_triggers

#: How late a due occurrence may still be fired as on time (the scheduler ticks every few s).
GRACE = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class Claim:
    trigger_id: str
    scheduled_for: datetime
    catch_up: bool


@dataclass(slots=True)
class Plan:
    claims: list[Claim] = field(default_factory=list)
    cursors: dict[str, str] = field(default_factory=dict)
    #: The definition's enabled after this evaluation (a disable condition met turns it off).
    enabled: bool = True
    run_count: int = 0
    next_run_at: datetime | None = None

    def moved(self, record: dict[str, Any]) -> bool:
        """Whether applying the plan changes the automation as kept."""
        return bool(
            self.claims
            or self.cursors != (record.get("cursors") or {})
            or self.enabled != record["definition"].get("enabled")
            or self.run_count != record.get("run_count", 0)
            or iso_or_none(self.next_run_at) != record.get("next_run_at")
        )


def iso_or_none(at: datetime | None) -> str | None:
    return at.isoformat().replace("+00:00", "Z") if at is not None else None


def plan(record: dict[str, Any], now: datetime) -> Plan:
    """What is due for the automation `record` keeps at `now`."""
    definition = record["definition"]
    out = Plan(
        cursors=dict(record.get("cursors") or {}),
        enabled=bool(definition.get("enabled")),
        run_count=int(record.get("run_count") or 0),
    )
    if not out.enabled:
        return out
    stop_at = after_date(definition)
    if stop_at is not None and now > stop_at:
        out.enabled = False
        return out
    allowance = after_runs(definition)
    for trigger in schedule_triggers(definition):
        schedule = trigger["schedule"]
        cursor = _instant(out.cursors.get(trigger["id"])) or now
        due = cron.due_between(schedule["expression"], schedule["timeZone"], cursor, now)
        out.cursors[trigger["id"]] = iso_or_none(due[-1] if due else cursor) or ""
        if not due:
            continue
        newest = due[-1]
        late = now - newest > GRACE
        if late and trigger.get("misfirePolicy", "runOnce") == "skip":
            continue
        if stop_at is not None and newest > stop_at:
            continue
        if allowance is not None and out.run_count >= allowance:
            break
        out.claims.append(Claim(trigger["id"], newest, catch_up=late))
        out.run_count += 1 if allowance is not None else 0
    if allowance is not None and out.run_count >= allowance:
        out.enabled = False
    if out.enabled:
        out.next_run_at = next_run_at(definition, out.cursors, now)
    return out


def next_run_at(
    definition: dict[str, Any], cursors: dict[str, str], now: datetime
) -> datetime | None:
    """The earliest occurrence awaiting evaluation over the schedule triggers."""
    found = [
        cron.next_after(
            t["schedule"]["expression"],
            t["schedule"]["timeZone"],
            _instant(cursors.get(t["id"])) or now,
        )
        for t in schedule_triggers(definition)
    ]
    return min(found) if found else None


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None
