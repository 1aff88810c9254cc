"""subscribe and unsubscribe: one subscription per channel per connection."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.turn_windows import window_size
from ...protocol.validation import required_str
from .. import grants, telemetry
from ..connection import Connection
from ..host import Host
from ..resources import watches


async def subscribe(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "subscribe", "channel")
    turns = window_size(params.get("view"))
    channel = host.fanout.channel(uri)
    if channel is None:
        what = "Resource watch" if uri.startswith(watches.PREFIX) else "Resource"
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"{what} not found: {uri}")
    # Who the connection is now decides, where watching the channel takes anything.
    if grants.SUBSCRIBE.get(channel.kind) is not None:
        refused = host.permissions.watch_refusal(
            await host.permissions.principal_now(conn), channel
        )
        if refused is not None:
            raise refused
    host.fanout.subscribe(conn, channel)
    if channel.kind == telemetry.KIND:
        # Stateless: an empty result, no snapshot; said from now on, never replayed.
        return {}
    try:
        await host.watches.attached(channel.uri)
    except ProtocolError:
        # The client a watch is asked of refused it: said as it said it, and not watched.
        host.fanout.unsubscribe(conn, channel)
        raise
    await host.changesets.attached(channel.uri)
    # The automations catalogue is answered under the spelling the client used; the root is
    # answered as ahp-root:// whatever spelling asked for it.
    resource = uri if channel.kind == "automation" else channel.uri
    return {"snapshot": host.snapshot(conn, channel, resource, turns=turns)}


async def unsubscribe(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "unsubscribe", "channel")
    channel = host.fanout.channel(uri)
    if channel is not None:
        host.fanout.unsubscribe(conn, channel)
