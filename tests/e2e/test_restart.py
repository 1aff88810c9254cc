"""What the host keeps survives a restart: root config is written to the database."""

from __future__ import annotations

import uuid

from tests.support.client import Client

ROOT = "ahp-root://"


async def test_root_config_survives_a_restart(server, connect):
    value = uuid.uuid4().hex
    client = await connect(server.url)
    await client.initialize()
    await client.dispatch_and_wait(
        ROOT, {"type": "root/configChanged", "config": {"x-kept": value, "replayBytes": 0}}
    )
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        result = await again.initialize()
        values = result["snapshots"][0]["state"]["config"]["values"]
        assert values["x-kept"] == value
        assert values["replayBytes"] == 0
        # Declared keys nobody pushed still hold their defaults.
        assert values["clientQueueBytes"] == 16 * 1024 * 1024
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_replace_push_is_kept_whole(server, connect):
    client = await connect(server.url)
    await client.initialize()
    await client.dispatch_and_wait(
        ROOT, {"type": "root/configChanged", "config": {"only": 1}, "replace": True}
    )
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        values = (await again.initialize())["snapshots"][0]["state"]["config"]["values"]
        assert values == {
            "only": 1,
            "clientQueueBytes": 16 * 1024 * 1024,
            "replayBytes": 32 * 1024 * 1024,
            "defaultShell": "",
            "chatMoves.enabled": False,
        }
    finally:
        await again.close()
        again.assert_schema_clean()
