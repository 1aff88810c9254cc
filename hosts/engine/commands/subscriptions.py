"""subscribe and unsubscribe: one subscription per channel per connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.errors import ErrorCode, ProtocolError
from .. import grants
from .params import required_str

if TYPE_CHECKING:
    from ..connection import Connection
    from ..host import Host


async def subscribe(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    uri = required_str(params, "subscribe", "channel")
    channel = host.find_channel(uri)
    if channel is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Resource not found: {uri}")
    needed = grants.SUBSCRIBE.get(channel.kind)
    if needed is not None:
        await host.require(conn, *needed)
    host.subscribe(conn, channel)
    # The automations catalogue is answered under the spelling the client used; the root is
    # answered as ahp-root:// whatever spelling asked for it.
    resource = uri if channel.kind == "automation" else channel.uri
    return {"snapshot": host.snapshot(conn, channel, resource)}


async def unsubscribe(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "unsubscribe", "channel")
    channel = host.find_channel(uri)
    if channel is not None:
        host.unsubscribe(conn, channel)
