"""Services by name, for callers outside the engine's loop: the REST API, Celery tasks and
other engines. A call is run by the engine that holds its session (placement.py): here, or
through the host's relay to the one that does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..client_requests import ASK_CLIENT
from ..host import Host
from ..other_nodes.piped_clients import OPEN_SERVICE
from ..principal import Principal
from ..sessions.records import first_folder
from .automations import (
    do_automation_claimed,
    do_automations_here,
    do_cancel_run_here,
    do_create_automation,
    do_remove_automation,
    do_run_automation,
    do_update_automation,
)
from .caller import Caller
from .chat_moves import do_take_chat
from .node_feeds import do_ask_client, do_feed_channel, do_open_pipe, do_stop_feed
from .policies import do_create_checked_session
from .sessions import Created, do_dispose_session
from .turns import do_cancel_session, do_send_to_session


@dataclass(frozen=True, slots=True)
class Service:
    run: Callable[..., Any]
    #: The argument naming the session the call acts on (None: a new session).
    routed_by: str | None


SERVICES: dict[str, Service] = {
    "create_session": Service(do_create_checked_session, None),
    "dispose_session": Service(do_dispose_session, "uri"),
    "send_message": Service(do_send_to_session, "uri"),
    "cancel_session": Service(do_cancel_session, "uri"),
    "create_automation": Service(do_create_automation, None),
    "update_automation": Service(do_update_automation, None),
    "remove_automation": Service(do_remove_automation, None),
    "run_automation": Service(do_run_automation, None),
    # A Celery worker asks whether this engine is there before it claims due runs, and, once
    # it claimed an automation's, has this engine start them.
    "automations_here": Service(do_automations_here, None),
    "automation_claimed": Service(do_automation_claimed, None),
    # Another node handing one of its chats to a session this node runs (chat_moves.py).
    "take_chat": Service(do_take_chat, None),
    # Another node's client cancelling a run this node runs.
    "cancel_automation_run": Service(do_cancel_run_here, None),
    # Another node whose client watches a channel this node runs (other_nodes/).
    "feed_channel": Service(do_feed_channel, None),
    "stop_feed": Service(do_stop_feed, None),
    # Another node whose socket's client this node met last (other_nodes/piped_clients.py).
    OPEN_SERVICE: Service(do_open_pipe, None),
    # Another node whose client asked about the files of a client connected here.
    ASK_CLIENT: Service(do_ask_client, None),
}


async def perform(
    host: Host, name: str, principal: Principal, *, relayed: bool = False, **args: Any
) -> Any:
    """Run the service `name` as `principal`, on the node that runs its session (a new one:
    the node its folder is placed on), and return its JSON answer once what it changed is
    written. A call another node carried here (`relayed`) runs here."""
    service = SERVICES[name]
    uri = args.get(service.routed_by) if service.routed_by else None
    # A session no live node runs is taken here first (a relayed call's too: the node that
    # carried it read the database a moment ago, and it is never carried on again).
    elsewhere = (
        await host.elsewhere(uri)
        if isinstance(uri, str)
        else await host.placement.place_new(
            first_folder(args.get("directories")), args.get("provider")
        )
        if name == "create_session" and not relayed
        else None
    )
    if elsewhere is not None and not relayed:
        if host.relay is None:
            raise RuntimeError(
                f"{uri or 'a new session'} is run by {elsewhere.node_id}: no relay reaches it"
            )
        return await host.relay.call(elsewhere.channel, name, principal, args)
    if isinstance(uri, str):
        await host.sessions.wake_session(uri)
    # Where the call came in (the REST API, the admin, a task), for the audit trail: said by
    # the engine client beside the service's own arguments, and taken off them here.
    came = args.pop("came_from", None) or {}
    caller = Caller(
        principal, via=str(came.get("via", "system")), address=str(came.get("address", ""))
    )
    result = service.run(host, caller, **args)
    if inspect.isawaitable(result):
        result = await result
    # What it changed, written now: waiting for the write-behind to fall idle could wait for
    # as long as a turn streams (its progress is written behind as it goes).
    await host.writes.flush()
    return result.to_json() if isinstance(result, Created) else result
