"""A frame over AHPD_MAX_FRAME_BYTES ends in a close frame the client sees (1009), not a drop."""

from __future__ import annotations

import asyncio

import pytest
import websockets

from tests.support.client import Client
from tests.support.server import TOKEN, ServerProcess

LIMIT = 1024 * 1024
PING = '{"jsonrpc":"2.0","id":9001,"method":"ping","params":{"channel":"ahp-root://"}}'


@pytest.fixture(scope="module")
def server():
    process = ServerProcess(env_extra={"AHPD_MAX_FRAME_BYTES": str(LIMIT)}).start()
    yield process
    process.close()


def padded(size: int) -> str:
    """A ping request `size` bytes long (JSON takes the spaces)."""
    return PING[:-1] + " " * (size - len(PING)) + "}"


async def ready(server: ServerProcess, compression: str | None = None) -> Client:
    ws = await websockets.connect(
        f"{server.base}?tkn={TOKEN}", compression=compression, max_size=None, ping_interval=None
    )
    client = Client(ws, f"frames-{compression}")
    await client.initialize()
    return client


async def test_a_frame_at_the_limit_is_read(server):
    client = await ready(server)
    try:
        await client.send_raw(padded(LIMIT))
        answer = await client.wait_for(
            lambda: next((f for f in client.frames if f.get("id") == 9001), None)
        )
        assert answer["result"] is None
    finally:
        await client.close()


@pytest.mark.parametrize("compression", [None, "deflate"])
async def test_a_frame_over_the_limit_is_closed_1009(server, compression):
    client = await ready(server, compression)
    # Deflated, the frame on the wire is small; what it inflates to is what counts.
    await client.ws.send(padded(LIMIT + 1))
    # Bounded only so that a server that keeps reading fails the test rather than hangs it.
    await asyncio.wait_for(client.ws.wait_closed(), 20)
    close = client.ws.protocol.close_rcvd
    assert close is not None, "the connection was dropped without a close frame"
    assert close.code == 1009
    await client.close()
    # Nobody else noticed.
    after = await ready(server)
    assert await after.request("ping", {"channel": "ahp-root://"}) is None
    await after.close()
