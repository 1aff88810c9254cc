"""WebSocket upgrades with a chosen Origin and Host, for the door's Origin and Host checks."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import websockets

from tests.support.client import Client
from tests.support.server import TOKEN, ServerProcess


async def upgrade(
    server: ServerProcess,
    *,
    origin: str | None = None,
    host: str | None = None,
    token: str | None = TOKEN,
) -> websockets.ClientConnection:
    """An upgrade with this Origin and this Host; the socket still goes to the server's
    loopback address, as a renamed or rebound name would reach it."""
    name = host or f"127.0.0.1:{server.port}"
    uri = f"ws://{name}/" + (f"?tkn={token}" if token else "")
    sock = socket.create_connection(("127.0.0.1", server.port))
    return await websockets.connect(
        uri,
        sock=sock,
        origin=origin,  # type: ignore[arg-type]
        compression=None,
        ping_interval=None,
        max_size=None,
    )


async def admitted(server: ServerProcess, **kwargs: Any) -> None:
    """The upgrade is accepted and the connection speaks AHP."""
    client = Client(await upgrade(server, **kwargs), "origin-check")
    try:
        assert (await client.initialize())["protocolVersion"] == "1.0.0"
    finally:
        await client.close()


async def refused(server: ServerProcess, **kwargs: Any) -> None:
    """The upgrade is refused 403, before any WebSocket is accepted."""
    with pytest.raises(websockets.InvalidStatus) as refusal:
        await upgrade(server, **kwargs)
    assert refusal.value.response.status_code == 403
