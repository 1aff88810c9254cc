"""runAutomation, fetchAutomationRuns and listAutomationTriggerDefinitions."""

from __future__ import annotations

from typing import Any, cast

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.validation import required_str
from ..automations import Automations
from ..connection import Connection
from ..host import Host
from ..services.automations import do_run_automation
from ..services.caller import Caller


def _automations(host: Host, method: str) -> Automations:
    if host.automations is None:
        raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"{method}: this host keeps no automations")
    return cast(Automations, host.automations)


async def run_automation(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    _automations(host, "runAutomation")
    uri = required_str(params, "runAutomation", "automation")
    request_id = required_str(params, "runAutomation", "requestId")
    principal = await host.permissions.principal_now(conn)
    return await do_run_automation(host, Caller(principal, sender=conn), uri, request_id)


async def fetch_automation_runs(
    host: Host, conn: Connection, params: dict[str, Any]
) -> dict[str, Any]:
    automations = _automations(host, "fetchAutomationRuns")
    uri = required_str(params, "fetchAutomationRuns", "automation")
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise invalid_params("fetchAutomationRuns: cursor must be a string")
    await automations.fetch_runs(uri, cursor)
    return {}


async def list_trigger_definitions(
    host: Host, conn: Connection, params: dict[str, Any]
) -> dict[str, Any]:
    # Event triggers only: a schedule is the protocol's own, and this host has no events.
    _automations(host, "listAutomationTriggerDefinitions")
    return {"items": []}
