"""Another process reaches the engine through the channel layer (PostgreSQL + Redis only)."""

from __future__ import annotations

import os
import uuid

import pytest

ROOT = "ahp-root://"

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="the in-memory layer is not shared between processes"
)


async def test_a_host_action_sent_over_the_layer_is_said_without_origin(server, connect):
    from channels_redis.core import RedisChannelLayer

    client = await connect(server.url)
    await client.initialize()
    layer = RedisChannelLayer(
        hosts=[{"address": os.environ["REDIS_URL"]}], prefix=server.env()["AHPD_REDIS_PREFIX"]
    )
    value = uuid.uuid4().hex
    await layer.send(
        "ahpd.engine",
        {
            "type": "host.action",
            "channel": ROOT,
            "action": {"type": "root/configChanged", "config": {"x-from-layer": value}},
        },
    )
    envelope = await client.wait_action(
        lambda e: e["action"].get("config") == {"x-from-layer": value}, timeout=20
    )
    assert "origin" not in envelope
    await client.assert_conforms(ROOT)
    await layer.flush()
