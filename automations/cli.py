"""`ahpd automation list|show|run|enable|disable`: the operator's automations.

`list` and `show` read the database, as the REST API's GETs do, so they answer while the
server is down. `run`, `enable` and `disable` change what the engine holds: they ask the
running server (hosts/management/ahpd/server.py, as root with its control token) through the
REST API's own views, which run the automations' services (do_run_automation,
do_update_automation) through the engine client, so every client of `ahp-automations://` is
told, as when the socket or the admin asks. Nothing here writes an automation itself.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from django.core.management.base import CommandError

from hosts.engine.clock import iso
from hosts.management.ahpd.server import call
from hosts.management.ahpd.verbs import Run, Shown, noun, verb

from .api import PREFIX, AutomationSerializer
from .models import Automation, AutomationRun
from .run_usage import usage_of_runs
from .store import run_record

#: How many of an automation's runs `show` lists, newest first.
RUNS_SHOWN = 10


def register(nouns: Any) -> None:
    automation = noun(nouns, "automation", "automations: sessions started on a schedule")
    verb(automation, "list", "every automation, oldest first", automation_list)
    show = verb(automation, "show", "one automation, its definition and its last runs", show_one)
    show.add_argument("id", help=f"its id (the part of {PREFIX}<id> after the slash)")
    run = verb(
        automation, "run", "run it now, as its owner (the running server starts it)", run_now
    )
    run.add_argument("id", help="its id")
    run.add_argument(
        "--request-id", help="asked again with the same request id, the same run is the answer"
    )
    for name, enabled in (("enable", True), ("disable", False)):
        switch = verb(
            automation,
            name,
            f"{name} its schedules (the running server holds it)",
            _switch(enabled),
        )
        switch.add_argument("id", help="its id")


def automation_named(automation_id: str) -> Automation:
    row: Automation | None = Automation.objects.filter(uri=PREFIX + automation_id).first()
    if row is None:
        raise CommandError(f"no automation {automation_id!r}")
    return row


def described(row: Automation) -> dict[str, Any]:
    """The automation as GET /api/automations/<id>/ answers it."""
    return dict(AutomationSerializer(row).data)


def _line(data: dict[str, Any]) -> str:
    return (
        f"{data['id']}  title={data['title'] or '-'}  owner={data['owner'] or '-'}  "
        f"{'enabled' if data['enabled'] else 'disabled'}  next={data['nextRunAt'] or '-'}  "
        f"runs={data['runCount']}"
    )


def automation_list(options: dict[str, Any]) -> Shown:
    rows = [described(row) for row in Automation.objects.order_by("created_ms", "uri")]
    return Shown(rows, [_line(row) for row in rows] or ["no automations"])


def _runs(row: Automation) -> list[dict[str, Any]]:
    """Its newest runs, each with what its sessions used (the operator reads every pool)."""
    runs = list(AutomationRun.objects.filter(automation=row).order_by("-created_ms", "uri"))
    runs = runs[:RUNS_SHOWN]
    used = usage_of_runs(runs)
    return [
        {
            "resource": run.uri,
            "status": run.status,
            "origin": run_record(run)["origin"],
            "createdAt": iso(run.created_ms),
            "primarySession": run.primary_session or None,
            "usage": used.get(run.uri),
        }
        for run in runs
    ]


def show_one(options: dict[str, Any]) -> Shown:
    row = automation_named(options["id"])
    data = {**described(row), "runs": _runs(row)}
    lines = [_line(data), f"definition: {json.dumps(data['definition'])}"]
    for run in data["runs"]:
        usage = run["usage"]
        used = f"  tokens={usage['tokens']}" if usage else ""
        lines.append(
            f"  {run['resource']}  {run['status']}  {run['origin']['kind']}  "
            f"at={run['createdAt']}  session={run['primarySession'] or '-'}{used}"
        )
    if not data["runs"]:
        lines.append("  no runs yet")
    return Shown(data, lines)


def _path(automation_id: str) -> str:
    return f"automations/{quote(automation_id, safe='')}/"


def run_now(options: dict[str, Any]) -> Shown:
    row = automation_named(options["id"])
    body = {"requestId": options["request_id"]} if options["request_id"] else {}
    answer = call("POST", _path(options["id"]) + "run/", body)
    data = {"automation": row.uri, "run": answer["resource"]}
    return Shown(data, [f"{answer['resource']} started ({row.uri})"])


def _switch(enabled: bool) -> Run:
    """`enable` or `disable`: the definition's `enabled` patched by the server's engine."""

    def switch(options: dict[str, Any]) -> Shown:
        automation_named(options["id"])
        call("PATCH", _path(options["id"]), {"enabled": enabled})
        # Kept before the engine answered: the row read now is the one it holds.
        data = described(automation_named(options["id"]))
        return Shown(data, [_line(data)])

    return switch
