"""The policy check at createSession (the agent asked for), before anything is made."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from .. import access
from ..host import Host
from ..meter import Work
from .caller import Caller
from .sessions import Created, agent_for, do_create_session


async def policy_allows_session(
    host: Host, caller: Caller, provider: Any, scope: Any, method: str
) -> None:
    """-32009 naming the policy row that refuses a session of this agent here, if one does
    (or naming the agent where no row allows it); nothing while policies are not checked."""
    caller.may("session:create")
    principal = caller.principal
    try:
        agent = agent_for(host, provider)
        where = access.creation_scope(principal, scope, method)
    except ProtocolError:
        return  # no such agent or scope: do_create_session says so, in its own order
    work = Work(principal.ref, where, agent, admin=principal.admin)
    refusal = await host.turns.metering.meter.check_session(work)
    if refusal is not None:
        raise ProtocolError(ErrorCode.PERMISSION_DENIED, refusal)


async def do_create_checked_session(host: Host, caller: Caller, **args: Any) -> Created:
    """do_create_session, once the policies allow the agent (the REST API's and the socket's)."""
    await policy_allows_session(
        host, caller, args.get("provider"), args.get("scope"), args.get("method", "createSession")
    )
    return do_create_session(host, caller, **args)
