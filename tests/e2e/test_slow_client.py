"""A client that stops reading is closed past clientQueueBytes and comes back with reconnect."""

from __future__ import annotations

import asyncio
import uuid

from tests.support.client import Client

ROOT = "ahp-root://"
MIB = 1024 * 1024


def push(**values: object) -> dict[str, object]:
    return {"type": "root/configChanged", "config": values}


async def test_a_client_that_stops_reading_is_closed_and_reconnects(server, connect):
    writer = await connect(server.url)
    await writer.initialize()
    reader = await connect(server.url, client_id=f"slow-{uuid.uuid4().hex[:6]}")
    await reader.initialize()
    await writer.dispatch_and_wait(ROOT, push(clientQueueBytes=MIB))
    last_seen = reader.last_seq
    # Stop reading: the socket's buffers fill, then the server's own queue passes 1 MiB.
    reader.ws.transport.pause_reading()
    big = uuid.uuid4().hex * 4000  # ~128 KiB per envelope
    try:
        for _ in range(400):
            await writer.dispatch_and_wait(ROOT, push(**{"x-flood": big + uuid.uuid4().hex}))
            if "past clientQueueBytes" in server.log_text():
                break
            await asyncio.sleep(0)
        assert "past clientQueueBytes" in server.log_text()
        assert reader.client_id in server.log_text()
    finally:
        reader.ws.transport.resume_reading()
    await reader.wait_for(lambda: reader.closed, timeout=20)
    # The writer and everyone else carried on.
    await writer.settle()
    # Back with reconnect, the state is whole again.
    again = await Client.open(server.url, client_id=reader.client_id)
    try:
        result = await again.request(
            "reconnect",
            {
                "channel": ROOT,
                "clientId": reader.client_id,
                "lastSeenServerSeq": last_seen,
                "subscriptions": [ROOT],
            },
        )
        assert result["type"] in ("replay", "snapshot")
        if result["type"] == "replay":
            assert result["actions"][-1]["serverSeq"] == writer.last_seq
    finally:
        await again.close()
        again.assert_schema_clean()
        await writer.dispatch_and_wait(ROOT, push(clientQueueBytes=16 * MIB))
