"""Automations: making, changing, removing and running one, and cancelling a run. One do_* per
change, whoever asks: the socket's actions and runAutomation, the REST API, the admin and a
Celery worker's claimed runs, each with the same grants and whose-automation checks.

Someone else's automation takes others:work (access.py). A client on the socket is refused in
the reference host's words for an operation its entry does not offer; other callers are told
which grant they lack. A client's own request (automation/createRequested, ...) is said after
what this host then holds, as the reference says it.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..automations import Automations
from ..automations.catalogue import unavailable
from ..automations.operations import seen_entry
from ..host import Host
from ..placement import Elsewhere, engine_channel
from ..sessions.records import first_folder
from .caller import Caller


def _automations(host: Host) -> Automations:
    if host.automations is None:
        raise ProtocolError(ErrorCode.NOT_FOUND, "This host keeps no automations")
    return cast(Automations, host.automations)


def _offered(automations: Automations, caller: Caller, uri: Any, operation: str) -> str:
    """The kept automation `uri`, once the caller may do `operation` to it."""
    if not isinstance(uri, str) or uri not in automations.records:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"Automation not found: {uri}")
    if (reason := automations.refusal(caller.principal, uri, f"automation:{operation}")) is None:
        return uri
    # A socket client is shown only the operations its entry offers: it is refused in the
    # reference's words for one it was not offered.
    said = unavailable(operation, uri) if caller.sender is not None else reason
    raise ProtocolError(ErrorCode.PERMISSION_DENIED, said)


def _refused_unless(automations: Automations, caller: Caller, uri: str, needed: str) -> None:
    if (reason := automations.refusal(caller.principal, uri, needed)) is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)


def _said_back(host: Host, caller: Caller, request: dict[str, Any] | None) -> None:
    if request is not None:
        caller.say(host, _automations(host).channel, request)


async def do_create_automation(
    host: Host,
    caller: Caller,
    definition: Any,
    uri: str | None = None,
    request: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A new automation of the caller's, said as automation/set (and the client's `request`
    after it); its entry. One kept already with this very definition is said again."""
    caller.may("automation:create")
    automations = _automations(host)
    uri = uri or f"ahp-automation:/{uuid.uuid4()}"
    if uri in automations.records:
        # Asked again for one kept: only by who may create it there (no operation an entry
        # offers, so the grant's words, whoever asks).
        _refused_unless(automations, caller, uri, "automation:create")
        if automations.records[uri]["definition"] != definition:
            raise ProtocolError(ErrorCode.ALREADY_EXISTS, f"Automation already exists: {uri}")
    # Asked before the definition only to answer it as the refusal it is (403), not as a bad
    # definition.
    if (reason := automations.kept_refusal(caller.principal.ref, uri)) is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, reason)
    if (reason := await automations.create(caller.principal.ref, uri, definition)) is not None:
        raise invalid_params(reason)
    _said_back(host, caller, request)
    return seen_entry(caller.principal, automations.entry(uri))


async def do_update_automation(
    host: Host, caller: Caller, uri: Any, changes: Any, request: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A patch laid over a kept automation, said as automation/set (and the client's `request`
    after it); its entry."""
    caller.may("automation:update")
    automations = _automations(host)
    _offered(automations, caller, uri, "update")
    if (reason := await automations.update(uri, changes)) is not None:
        raise invalid_params(reason)
    _said_back(host, caller, request)
    return seen_entry(caller.principal, automations.entry(uri))


async def do_remove_automation(
    host: Host, caller: Caller, uri: Any, request: dict[str, Any] | None = None
) -> None:
    """An automation and its runs forgotten, said as automation/removed: the client's own
    `request`, or on this host's account. A client's removal of one nobody keeps is the
    protocol's no-op, said back as sent; anyone else is told it is not found."""
    caller.may("automation:remove")
    automations = _automations(host)
    if request is not None and (not isinstance(uri, str) or uri not in automations.records):
        _said_back(host, caller, request)
        return
    _offered(automations, caller, uri, "remove")
    await automations.remove(uri, say=request is None)
    _said_back(host, caller, request)


async def do_run_automation(
    host: Host, caller: Caller, uri: str, request_id: str | None = None, placed: bool = False
) -> dict[str, Any]:
    """Run now (runAutomation, REST, the admin): the run, kept before its session is made;
    the same run for a request asked again, or the one of it that has not ended. Of several
    nodes, the run (its session, its turn) is the least loaded one's that serves its folder:
    asked there, unless it was `placed` there already."""
    automations = _automations(host)
    _offered(automations, caller, uri, "run")
    request_id = request_id or str(uuid.uuid4())
    node = None if placed else await _placed(host, automations, uri)
    if node is not None:
        assert host.relay is not None
        args = {"uri": uri, "request_id": request_id, "placed": True, **_came_from(caller)}
        answer = await host.relay.call(node.channel, "run_automation", caller.principal, args)
        # Read back here at once: the run its asker is answered is one it can watch here.
        await automations.changed_elsewhere(uri)
        return cast(dict[str, Any], answer)
    earlier = {r["uri"] for r in automations.history.get(uri, [])}
    run = await automations.run_now(caller.principal, uri, request_id)
    if run not in earlier:  # not a request asked again, nor a run not yet ended
        await host.audit.record(caller.act("automation.ran", "automation", uri, run=run))
    return {"resource": run}


async def do_cancel_automation_run(
    host: Host, caller: Caller, run_uri: str, request: dict[str, Any]
) -> None:
    """A client's automationRun/cancelRequested: the run's turns stopped (one with no session
    yet cancelled at once), and the request answered to its sender alone: what came of it is
    the run's automationRun/lifecycleChanged. A run another node runs is cancelled there."""
    automations = _automations(host)
    run = automations.runs.live.get(run_uri)
    if run is not None and not automations.runs.here(run):
        reason = await _cancel_elsewhere(host, caller, run)
    else:
        reason = await _cancel_here(automations, caller, run_uri)
    if reason is not None:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, reason)
    channel = host.fanout.channel(run_uri)
    assert channel is not None, "a live run has its channel"
    host.fanout.emit(
        channel,
        request,
        origin=caller.origin,
        sender=caller.sender,
        reduce_state=False,
        sender_only=True,
    )


async def _cancel_here(automations: Automations, caller: Caller, run_uri: str) -> str | None:
    run = automations.runs.live.get(run_uri)
    if run is not None and run["automation"] in automations.records:
        # No operation an entry offers either: the grant's words, whoever asks.
        _refused_unless(automations, caller, run["automation"], "automation:cancel")
    return await automations.runs.cancel(run_uri)


async def _cancel_elsewhere(host: Host, caller: Caller, run: dict[str, Any]) -> str | None:
    node = str(run["node"])
    if host.relay is None or node not in await host.placement.others():
        # Its node is gone: the run is failed as the nodes left see that.
        return f"Automation run cancellation was not accepted: {run['uri']}"
    args = {"run": run["uri"], **_came_from(caller)}
    answer = await host.relay.call(
        engine_channel(node), "cancel_automation_run", caller.principal, args
    )
    return None if answer["refused"] is None else str(answer["refused"])


async def do_cancel_run_here(host: Host, caller: Caller, run: str) -> dict[str, Any]:
    """Another node's client asked to cancel a run this node runs: why not, or None (that
    node answers its client)."""
    return {"refused": await _cancel_here(_automations(host), caller, run)}


async def do_automation_claimed(
    host: Host, caller: Caller, automation: str, runs: list[str], placed: bool = False
) -> dict[str, Any]:
    """Runs claimed for `automation` elsewhere (a Celery worker): read again and started, by
    the least loaded node that serves its folder (asked there, unless `placed` there already).
    Only the deployment's own principal asks this (the layer is the trust boundary)."""
    caller.may("automation:run")
    automations = _automations(host)
    node = None if placed else await _placed(host, automations, automation)
    if node is not None:
        assert host.relay is not None
        args = {"automation": automation, "runs": runs, "placed": True, **_came_from(caller)}
        return cast(
            dict[str, Any],
            await host.relay.call(node.channel, "automation_claimed", caller.principal, args),
        )
    await automations.claimed(automation, [str(r) for r in runs])
    return {"started": len(runs)}


def _came_from(caller: Caller) -> dict[str, Any]:
    """Where a call carried to another node came in, for its audit trail (services/calls.py
    takes it off the call's arguments there)."""
    return {"came_from": {"via": caller.via, "address": caller.address}}


async def _placed(host: Host, automations: Automations, uri: str) -> Elsewhere | None:
    """The other node a run of `uri` goes to (the least loaded live one serving the folder
    its sessions work in and running their agent), or None for this one."""
    if host.relay is None or not host.placement.node_id:
        return None
    record = automations.records.get(uri)
    template = (record or {}).get("definition", {}).get("session") or {}
    return await host.placement.place_new(
        first_folder(template.get("workingDirectories")), template.get("provider")
    )


async def do_automations_here(host: Host, caller: Caller) -> dict[str, Any]:
    """This engine keeps the automations and reads its channel: a Celery worker asks before it
    claims anything, so nothing is claimed for a server that is not there to start it."""
    caller.may("automation:run")
    _automations(host)
    return {}
