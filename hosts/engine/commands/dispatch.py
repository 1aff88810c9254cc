"""dispatchAction: the pipeline a client's action goes through before anybody sees it.

Known type, and one a client may send -> its rule's grant -> a target this host knows (or the
rule's answer for one it does not) -> whose the target is (the session it is in, a terminal's
owner: access.py) -> the action's shape -> the rule's effect. A refusal is an envelope too: the
next serverSeq, a rejectionReason, and no state change. The rules are rules/; the shapes
hosts/protocol/validation.py.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from ...protocol.actions import ActionSpec, action_spec
from ...protocol.errors import ProtocolError, invalid_params
from ...protocol.shapes import Origin
from ...protocol.uris import canonical, kind_of
from ...protocol.validation import action_problem, required_int, required_str
from .. import access
from ..channel import Channel
from ..connection import Connection
from ..host import Host
from ..rules import DROP, ECHO, ActionRule, Dispatch, rule_for
from ..services import Caller
from ..services.caller import signed

log = logging.getLogger("ahpd.engine")


def dispatch_params(params: dict[str, Any]) -> tuple[str, int, dict[str, Any]]:
    """A dispatchAction's channel, clientSeq and action, or -32602 naming what is wrong: read
    here whichever node applies it."""
    uri = required_str(params, "dispatchAction", "channel")
    client_seq = required_int(params, "dispatchAction", "clientSeq")
    raw = params.get("action")
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise invalid_params("dispatchAction: action must be an object with a string type")
    return uri, client_seq, raw


async def dispatch_action(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri, client_seq, action = dispatch_params(params)
    assert conn.client_id is not None
    origin: Origin = {"clientId": conn.client_id, "clientSeq": client_seq}
    action_type: str = action["type"]
    target = host.fanout.channel(uri)

    def refuse(reason: str) -> None:
        channel = target or Channel(canonical(uri), "unknown", None)
        host.fanout.emit(channel, action, origin=origin, sender=conn, rejection=reason)

    spec = action_spec(action_type)
    rule = rule_for(action_type)
    if spec is None or not spec.client_dispatchable or rule is None:
        return refuse(f"Server-only action: {action_type}")
    caller = Caller(conn.principal, origin, conn)
    if rule.by_design and rule.refusal is not None:
        return refuse(
            rule.refusal(Dispatch(host, target or Channel(uri, "unknown", None), action, caller))
        )
    needed = rule.needed(action)
    if needed is not None:
        try:
            principal = await host.permissions.principal_now(conn)
        except ProtocolError as exc:
            return refuse(exc.message)
        except Exception:
            # The client applied its action already: it is owed an answer whatever failed.
            log.exception("reading who %s is failed", conn.client_id)
            return refuse("The host could not check this action's grants; try again.")
        if not principal.may(needed):
            return refuse(f"{principal.ref} may not {needed} here")
        caller = Caller(principal, origin, conn)
        if rule.signed:
            action = signed(action, principal.ref)
        # The target may have gone (or come) while the grants were read.
        target = host.fanout.channel(uri)
    if rule.sender_refusal is not None:
        kind = target.kind if target is not None else kind_of(uri)
        if (reason := rule.sender_refusal(caller, kind)) is not None:
            return refuse(reason)
    if target is None:
        return _unknown_target(host, rule, spec, uri, action, caller, refuse)
    if target.kind != spec.channel_kind:
        return refuse(f"{action_type} is not an action of {target.uri}")
    if (moving := host.sessions.moving_refusal(target.uri)) is not None:
        return refuse(moving)
    # In a session, or on a terminal, whose it is decides too (access.py).
    if needed is not None and (record := host.permissions.whose(target.uri)) is not None:
        if (reason := access.refusal(caller.principal, record, needed)) is not None:
            return refuse(reason)
    reason = action_problem(action)
    if reason is not None:
        return refuse(reason)
    dispatch = Dispatch(host, target, action, caller)
    if rule.effect is None:
        assert rule.refusal is not None, f"{action_type} has neither an effect nor a refusal"
        return refuse(rule.refusal(dispatch))
    try:
        outcome = rule.effect(dispatch)
        reason = await outcome if inspect.isawaitable(outcome) else outcome
    except ProtocolError as exc:
        reason = exc.message
    if reason is not None:
        refuse(reason)
    return None


def _unknown_target(
    host: Host,
    rule: ActionRule,
    spec: ActionSpec,
    uri: str,
    action: dict[str, Any],
    caller: Caller,
    refuse: Callable[[str], None],
) -> None:
    """An action on a target nothing here knows, answered as VS Code's host answers it."""
    answer = rule.unknown_target or _UNKNOWN_BY_KIND.get(
        spec.channel_kind, "Resource not found: {uri}"
    )
    if answer == DROP:
        return None
    if answer == ECHO:
        # Said back on the channel the client named, with its origin; nothing is kept, reduced
        # or run for it.
        host.fanout.emit(
            Channel(uri, spec.channel_kind, None),
            action,
            origin=caller.origin,
            sender=caller.sender,
            reduce_state=False,
        )
        return None
    return refuse(answer.format(uri=uri))


#: The answer to an unknown target, by the kind of channel the action belongs to.
_UNKNOWN_BY_KIND = {"session": "Session not found: {uri}", "chat": ECHO}
