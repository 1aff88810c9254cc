"""The engine's AutomationStore port over the ORM, and the claim of due runs that the embedded
scheduler (through the port) and the Celery task (directly) both make."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from hosts.engine.automations.limits import RUN_LIMIT_ERROR
from hosts.engine.automations.schedule import Plan, iso_or_none, plan
from hosts.engine.clock import iso
from hosts.engine.principal import Principal
from hosts.store.directory import person_signed_in
from hosts.store.engine_database import db_call

from .models import Automation, AutomationRun

TERMINAL = ("completed", "failed", "cancelled")


def automation_record(row: Automation) -> dict[str, Any]:
    return {
        "uri": row.uri,
        "owner": row.owner,
        "definition": row.definition,
        "created_ms": row.created_ms,
        "modified_ms": row.modified_ms,
        "cursors": dict(row.cursors or {}),
        "run_count": row.run_count,
        "next_run_at": iso_or_none(row.next_run_at),
    }


def run_record(row: AutomationRun) -> dict[str, Any]:
    origin: dict[str, Any] = {"kind": row.origin_kind}
    if row.origin_kind == "trigger":
        origin["triggerId"] = row.trigger_id
        if row.scheduled_for is not None:
            origin["scheduledFor"] = iso_or_none(row.scheduled_for.astimezone(UTC))
        if row.catch_up:
            origin["catchUp"] = True
    return {
        "uri": row.uri,
        "automation": row.automation_id,
        "owner": row.owner,
        "origin": origin,
        "lifecycle": row.lifecycle,
        "sessions": list(row.sessions),
        "primary_session": row.primary_session or None,
        "request_id": row.request_id,
        "node": row.node,
    }


def _save_automation(record: dict[str, Any]) -> None:
    next_run_at = record.get("next_run_at")
    Automation.objects.update_or_create(
        uri=record["uri"],
        defaults={
            "title": str(record["definition"].get("title", ""))[:512],
            "definition": record["definition"],
            "owner": record["owner"],
            "created_ms": record["created_ms"],
            "modified_ms": record["modified_ms"],
            "cursors": record.get("cursors") or {},
            "run_count": record.get("run_count") or 0,
            "next_run_at": datetime.fromisoformat(next_run_at) if next_run_at else None,
        },
    )


def _run_fields(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": run["lifecycle"]["status"],
        "lifecycle": run["lifecycle"],
        "sessions": run["sessions"],
        "primary_session": run.get("primary_session") or "",
    }


def add_run_row(run: dict[str, Any]) -> dict[str, Any]:
    if run.get("request_id"):
        kept = AutomationRun.objects.filter(request_id=run["request_id"]).first()
        if kept is not None:
            return run_record(kept)
    try:
        with transaction.atomic():
            row = AutomationRun.objects.create(
                uri=run["uri"],
                automation_id=run["automation"],
                owner=run["owner"],
                origin_kind="manual",
                request_id=run.get("request_id"),
                created_ms=_ms(run["lifecycle"]["createdAt"]),
                node=run.get("node") or "",
                **_run_fields(run),
            )
    except IntegrityError:
        # The same request, asked twice at once: the one that got in is the run.
        return run_record(AutomationRun.objects.get(request_id=run["request_id"]))
    return run_record(row)


def runs_started(owner: str, since_ms: int, besides: list[str]) -> int:
    window = AutomationRun.objects.filter(owner=owner, created_ms__gte=since_ms)
    window = window.exclude(uri__in=besides)
    # A key lookup that matches, never one excluded: rows with no error have no such key.
    refused = window.filter(status="failed", lifecycle__error__errorType=RUN_LIMIT_ERROR)
    return window.count() - refused.count()


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def fail_unfinished(message: str, kept: tuple[str, ...], blank: bool) -> list[str]:
    """Fail every run kept pending or running but those of the nodes in `kept` (and those
    no node took, unless `blank`): each by a write under the condition that it is still
    unfinished, so two nodes failing one node's runs fail each once. The automations whose
    runs moved."""
    moved: set[str] = set()
    now = iso(int(datetime.now(UTC).timestamp() * 1000))
    rows = AutomationRun.objects.exclude(status__in=TERMINAL).exclude(node__in=kept)
    if not blank:
        rows = rows.exclude(node="")
    for row in rows:
        lifecycle = {
            key: row.lifecycle[key] for key in ("createdAt", "startedAt") if key in row.lifecycle
        }
        lifecycle = {
            "status": "failed",
            **lifecycle,
            "completedAt": now,
            "error": {"errorType": "interrupted", "message": f"{message} ({row.status})"},
        }
        unfinished = AutomationRun.objects.filter(uri=row.uri, status=row.status, node=row.node)
        if unfinished.update(status="failed", lifecycle=lifecycle):
            moved.add(row.automation_id)
    return sorted(moved)


def take_runs(uris: list[str], node: str) -> None:
    AutomationRun.objects.filter(uri__in=uris, node="").update(node=node)


def apply_plan(uri: str, due: Plan, now: datetime) -> list[str]:
    """Claim the runs of a plan and keep what it moved; the runs this claimer got in.

    Each run is its own savepoint: one another claimer inserted first is theirs, and this
    claimer neither counts it toward afterRuns nor starts it.
    """
    claimed: list[str] = []
    row = Automation.objects.get(uri=uri)
    count = row.run_count
    for claim in due.claims:
        run_uri = f"ahp-automation-run:/{uuid.uuid4()}"
        created = iso(int(now.timestamp() * 1000))
        try:
            with transaction.atomic():
                AutomationRun.objects.create(
                    uri=run_uri,
                    automation=row,
                    owner=row.owner,
                    origin_kind="trigger",
                    trigger_id=claim.trigger_id,
                    scheduled_for=claim.scheduled_for,
                    catch_up=claim.catch_up,
                    status="pending",
                    lifecycle={"status": "pending", "createdAt": created},
                    created_ms=int(now.timestamp() * 1000),
                )
        except IntegrityError:
            continue
        claimed.append(run_uri)
    admitted = len(claimed) if "afterRuns" in _condition_kinds(row.definition) else 0
    row.run_count = count + admitted
    row.cursors = due.cursors
    row.next_run_at = due.next_run_at
    if row.definition.get("enabled") != due.enabled:
        row.definition = {**row.definition, "enabled": due.enabled}
        row.modified_ms = int(now.timestamp() * 1000)
    row.save()
    return claimed


def _condition_kinds(definition: dict[str, Any]) -> set[str]:
    return {str(c.get("kind")) for c in definition.get("disableConditions") or []}


def claim_due(now: datetime) -> list[tuple[str, list[str]]]:
    """Every automation's due runs at `now`, claimed; (automation, runs) for each that moved.

    The row is locked while its plan is made and applied (PostgreSQL; SQLite has one writer),
    so a second claimer reads the cursors the first moved; the unique key is what holds when
    two read before either wrote.
    """
    moved: list[tuple[str, list[str]]] = []
    for uri in Automation.objects.filter(definition__enabled=True).values_list("uri", flat=True):
        with transaction.atomic():
            row = Automation.objects.select_for_update().filter(uri=uri).first()
            if row is None:
                continue
            record = automation_record(row)
            due = plan(record, now)
            if not due.moved(record):
                continue
            moved.append((uri, apply_plan(uri, due, now)))
    return moved


def _owner_principal(ref: str) -> Principal | None:
    kind, _, name = ref.partition(":")
    if kind != "user":
        return None
    user = get_user_model().objects.filter(username=name, is_active=True).first()
    return person_signed_in(user) if user is not None else None


def _load_automation(uri: str) -> dict[str, Any] | None:
    row = Automation.objects.filter(uri=uri).first()
    return automation_record(row) if row is not None else None


def _load_run(uri: str) -> dict[str, Any] | None:
    row = AutomationRun.objects.filter(uri=uri).first()
    return run_record(row) if row is not None else None


class DjangoAutomationStore:
    async def load_automations(self) -> list[dict[str, Any]]:
        return await db_call(lambda: [automation_record(r) for r in Automation.objects.all()])()

    async def load_automation(self, uri: str) -> dict[str, Any] | None:
        return await db_call(_load_automation)(uri)

    async def save_automation(self, record: dict[str, Any]) -> None:
        await db_call(_save_automation)(record)

    async def delete_automation(self, uri: str) -> None:
        await db_call(lambda: Automation.objects.filter(uri=uri).delete())()

    async def load_runs(self, automation: str, limit: int) -> list[dict[str, Any]]:
        def load() -> list[dict[str, Any]]:
            rows = AutomationRun.objects.filter(automation_id=automation).order_by("-created_ms")
            return [run_record(r) for r in rows[:limit]]

        return await db_call(load)()

    async def load_run(self, uri: str) -> dict[str, Any] | None:
        return await db_call(_load_run)(uri)

    async def add_run(self, run: dict[str, Any]) -> dict[str, Any]:
        return await db_call(add_run_row)(run)

    async def save_run(self, run: dict[str, Any]) -> None:
        await db_call(
            lambda: AutomationRun.objects.filter(uri=run["uri"]).update(**_run_fields(run))
        )()

    async def runs_started(self, owner: str, since_ms: int, besides: list[str]) -> int:
        return await db_call(runs_started)(owner, since_ms, besides)

    async def fail_unfinished_runs(
        self, message: str, kept: tuple[str, ...] = (), *, blank: bool = True
    ) -> list[str]:
        return await db_call(fail_unfinished)(message, kept, blank)

    async def take_runs(self, uris: list[str], node: str) -> None:
        await db_call(take_runs)(uris, node)

    async def claim_due(self, now: datetime) -> list[tuple[str, list[str]]]:
        return await db_call(claim_due)(now)

    async def owner_principal(self, ref: str) -> Principal | None:
        return await db_call(_owner_principal)(ref)
