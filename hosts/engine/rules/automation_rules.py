"""The rules of the automation catalogue's and a run's actions.

A create or an update is a request: what this host then holds is said as automation/set, and
the request itself after it. A removal is said as sent (the client's action removes the
entry), one of an automation nobody keeps included. A cancel is answered to its sender alone:
what came of it is the run's automationRun/lifecycleChanged. Someone else's automation takes
others:work (access.py), as a session of someone else's does; an update or a removal the
sender's entry does not offer is refused in the reference's words.
"""

from __future__ import annotations

from ..services.automations import (
    do_cancel_automation_run,
    do_create_automation,
    do_remove_automation,
    do_update_automation,
)
from .rule import ActionRule, Dispatch


async def _create(d: Dispatch) -> str | None:
    resource = d.action.get("resource")
    if not isinstance(resource, str):
        return "automation/createRequested: resource must be an ahp-automation: URI"
    definition = d.action.get("definition")
    await do_create_automation(d.host, d.caller, definition, resource, request=d.action)
    return None


async def _update(d: Dispatch) -> str | None:
    resource = d.action.get("resource")
    changes = d.action.get("changes")
    await do_update_automation(d.host, d.caller, resource, changes, request=d.action)
    return None


async def _removed(d: Dispatch) -> str | None:
    await do_remove_automation(d.host, d.caller, d.action.get("resource"), request=d.action)
    return None


async def _cancel(d: Dispatch) -> str | None:
    await do_cancel_automation_run(d.host, d.caller, d.channel.uri, d.action)
    return None


AUTOMATION_RULES = (
    ActionRule("automation/createRequested", grant="automation:create", effect=_create),
    ActionRule("automation/updateRequested", grant="automation:update", effect=_update),
    ActionRule("automation/set", said_by_host=True),
    ActionRule("automation/removed", grant="automation:remove", effect=_removed, said_by_host=True),
    ActionRule("automationRun/lifecycleChanged", said_by_host=True),
    ActionRule("automationRun/sessionSet", said_by_host=True),
    ActionRule("automationRun/sessionRemoved", said_by_host=True),
    ActionRule("automationRun/primarySessionChanged", said_by_host=True),
    ActionRule(
        "automationRun/cancelRequested",
        grant="automation:cancel",
        effect=_cancel,
        unknown_target="Automation run not found: {uri}",
    ),
)
