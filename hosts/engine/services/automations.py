"""Automations by name, for callers outside the engine's loop (calls.py): the REST API's
writes, and a Celery worker's claimed runs. Each is what the socket's action or command does,
said on this host's account, with the same grants and whose-automation checks."""

from __future__ import annotations

import uuid
from typing import Any, cast

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..automations import Automations
from ..automations.operations import seen_entry
from ..host import Host
from .caller import Caller


def _automations(host: Host) -> Automations:
    if host.automations is None:
        raise ProtocolError(ErrorCode.NOT_FOUND, "This host keeps no automations")
    return cast(Automations, host.automations)


def _kept(automations: Automations, caller: Caller, uri: Any, needed: str) -> str:
    if not isinstance(uri, str) or uri not in automations.records:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"Automation not found: {uri}")
    if (reason := automations.refusal(caller.principal, uri, needed)) is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)
    return uri


async def do_create_automation(
    host: Host, caller: Caller, definition: Any, uri: str | None = None
) -> dict[str, Any]:
    """A new automation of the caller's; its entry."""
    caller.may("automation:create")
    automations = _automations(host)
    uri = uri or f"ahp-automation:/{uuid.uuid4()}"
    if uri in automations.records:
        raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"Automation already exists: {uri}")
    # Asked first only to answer it as the refusal it is (403), not as a bad definition.
    if (reason := automations.kept_refusal(caller.principal.ref, uri)) is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)
    if (reason := await automations.create(caller.principal.ref, uri, definition)) is not None:
        raise invalid_params(reason)
    return seen_entry(caller.principal, automations.entry(uri))


async def do_update_automation(
    host: Host, caller: Caller, uri: str, changes: Any
) -> dict[str, Any]:
    caller.may("automation:update")
    automations = _automations(host)
    _kept(automations, caller, uri, "automation:update")
    if (reason := await automations.update(uri, changes)) is not None:
        raise invalid_params(reason)
    return seen_entry(caller.principal, automations.entry(uri))


async def do_remove_automation(host: Host, caller: Caller, uri: str) -> None:
    caller.may("automation:remove")
    automations = _automations(host)
    _kept(automations, caller, uri, "automation:remove")
    await automations.remove(uri, say=True)


async def do_run_automation(
    host: Host, caller: Caller, uri: str, request_id: str | None = None
) -> dict[str, Any]:
    """Run now (REST): the run, kept before its session is made."""
    caller.may("automation:run")
    automations = _automations(host)
    _kept(automations, caller, uri, "automation:run")
    run = await automations.run_now(caller.principal, uri, request_id or str(uuid.uuid4()))
    return {"resource": run}


async def do_automation_claimed(
    host: Host, caller: Caller, automation: str, runs: list[str]
) -> dict[str, Any]:
    """Runs claimed for `automation` elsewhere (a Celery worker): read again and started. Only
    the deployment's own principal asks this (the layer is the trust boundary)."""
    caller.may("automation:run")
    await _automations(host).claimed(automation, [str(r) for r in runs])
    return {"started": len(runs)}


async def do_automations_here(host: Host, caller: Caller) -> dict[str, Any]:
    """This engine keeps the automations and reads its channel: a Celery worker asks before it
    claims anything, so nothing is claimed for a server that is not there to start it."""
    caller.may("automation:run")
    _automations(host)
    return {}
