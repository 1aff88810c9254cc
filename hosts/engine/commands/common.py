"""What several command handlers share: who is asking, and a command that names its target."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...protocol.validation import required_str
from ..connection import Connection
from ..host import Host
from ..services import Caller


def caller_of(conn: Connection) -> Caller:
    """A command's caller: the connection's principal (read fresh by the router)."""
    return Caller(conn.principal, sender=conn)


def on_channel(
    method: str, service: Callable[[Host, Caller, str], Awaitable[None]]
) -> Callable[[Host, Connection, dict[str, Any]], Awaitable[None]]:
    """A command whose whole work is a service on the channel it names, answered with null."""

    async def handle(host: Host, conn: Connection, params: dict[str, Any]) -> None:
        await service(host, caller_of(conn), required_str(params, method, "channel"))

    handle.__name__ = handle.__qualname__ = method
    return handle
