"""subscribe and unsubscribe: one subscription per channel per connection."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.validation import required_str
from .. import access, grants
from ..connection import Connection
from ..host import Host
from ..resources import watches


async def subscribe(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "subscribe", "channel")
    channel = host.fanout.channel(uri)
    if channel is None:
        what = "Resource watch" if uri.startswith(watches.PREFIX) else "Resource"
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"{what} not found: {uri}")
    needed = grants.SUBSCRIBE.get(channel.kind)
    if needed is not None:
        principal = await host.gate.require(conn, *needed)
        # A session's channels are read only by whom that session lets read it.
        record = host.gate.session_of(channel.uri)
        if record is not None:
            access.require(principal, record, access.READ_SESSION)
    host.fanout.subscribe(conn, channel)
    await host.watches.attached(channel.uri)
    # The automations catalogue is answered under the spelling the client used; the root is
    # answered as ahp-root:// whatever spelling asked for it.
    resource = uri if channel.kind == "automation" else channel.uri
    return {"snapshot": host.snapshot(conn, channel, resource)}


async def unsubscribe(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "unsubscribe", "channel")
    channel = host.fanout.channel(uri)
    if channel is not None:
        host.fanout.unsubscribe(conn, channel)
