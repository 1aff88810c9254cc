"""The rules of the automation catalogue's and a run's actions.

A create or an update is a request: what this host then holds is said as automation/set, and
the request itself after it. A removal is said as sent (the client's action removes the
entry), one of an automation nobody keeps included. A cancel is answered to its sender alone:
what came of it is the run's automationRun/lifecycleChanged. Someone else's automation takes
others:work (access.py), as a session of someone else's does; an update or a removal the
sender's entry does not offer is refused in the reference's words.
"""

from __future__ import annotations

from typing import cast

from ..automations import Automations
from .rule import ActionRule, Dispatch


def _automations(d: Dispatch) -> Automations:
    assert d.host.automations is not None, "the catalogue's channel exists only with automations"
    return cast(Automations, d.host.automations)


async def _create(d: Dispatch) -> str | None:
    resource = d.action.get("resource")
    if not isinstance(resource, str):
        return "automation/createRequested: resource must be an ahp-automation: URI"
    automations = _automations(d)
    if resource in automations.records:
        if reason := automations.refusal(d.caller.principal, resource, "automation:create"):
            return reason
    reason = await automations.create(d.caller.principal.ref, resource, d.action.get("definition"))
    if reason is None:
        d.say()
    return reason


async def _update(d: Dispatch) -> str | None:
    resource = d.action.get("resource")
    automations = _automations(d)
    if not isinstance(resource, str) or resource not in automations.records:
        return f"Automation not found: {resource}"
    if reason := automations.unoffered(d.caller.principal, resource, "update"):
        return reason
    reason = await automations.update(resource, d.action.get("changes"))
    if reason is None:
        d.say()
    return reason


async def _removed(d: Dispatch) -> str | None:
    resource = d.action.get("resource")
    automations = _automations(d)
    if isinstance(resource, str) and resource in automations.records:
        if reason := automations.unoffered(d.caller.principal, resource, "remove"):
            return reason
        await automations.remove(resource)
    # The protocol's idempotent no-op for one nobody keeps: said back as it was sent.
    d.say()
    return None


async def _cancel(d: Dispatch) -> str | None:
    automations = _automations(d)
    run = automations.runs.live.get(d.channel.uri)
    if run is not None and run["automation"] in automations.records:
        reason = automations.refusal(d.caller.principal, run["automation"], "automation:cancel")
        if reason is not None:
            return reason
    reason = await automations.runs.cancel(d.channel.uri)
    if reason is None:
        d.host.fanout.emit(
            d.channel,
            d.action,
            origin=d.caller.origin,
            sender=d.caller.sender,
            reduce_state=False,
            sender_only=True,
        )
    return reason


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
