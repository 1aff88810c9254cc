"""Bad input gets a clear error naming what was wrong; nothing else notices."""

from __future__ import annotations

import uuid

import pytest

from tests.support.client import RpcError

ROOT = "ahp-root://"


async def ready(server, connect):
    client = await connect(server.url)
    await client.initialize()
    return client


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("{not json", -32700),
        ("[1, 2]", -32600),
        ('"a string"', -32600),
        ('{"jsonrpc": "1.0", "id": 1, "method": "ping", "params": {}}', -32600),
        ('{"jsonrpc": "2.0", "id": 1, "method": 5, "params": {}}', -32600),
        ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}', -32602),
    ],
)
async def test_malformed_frames_are_answered_and_the_connection_stays_up(
    server, connect, text, code
):
    client = await ready(server, connect)
    watcher = await ready(server, connect)
    await client.send_raw(text)
    error = await client.wait_for(
        lambda: next(
            (f["error"] for f in client.frames if "error" in f and f["error"]["code"] == code), None
        )
    )
    assert error["message"]
    assert await client.request("ping", {"channel": ROOT}) is None
    # Another client never noticed.
    mark = {"x-bad": uuid.uuid4().hex}
    echo = await client.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": mark})
    await watcher.wait_action(lambda e: e["serverSeq"] == echo["serverSeq"])


async def test_a_binary_frame_is_refused_and_the_connection_stays_up(server, connect):
    client = await ready(server, connect)
    await client.send_raw(b'{"jsonrpc":"2.0","id":99,"method":"ping","params":{}}')
    error = await client.wait_error_without_id()
    assert error["code"] == -32600
    assert "binary" in error["message"]
    assert await client.request("ping", {"channel": ROOT}) is None


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"channel": ROOT, "protocolVersions": "1.0.0", "clientId": "x"}, "protocolVersions"),
        ({"channel": ROOT, "protocolVersions": ["1.0.0"]}, "clientId"),
        ({"channel": ROOT, "protocolVersions": ["1.0.0"], "clientId": 5}, "clientId"),
        (
            {
                "channel": ROOT,
                "protocolVersions": ["1.0.0"],
                "clientId": "x",
                "initialSubscriptions": "ahp-root://",
            },
            "initialSubscriptions",
        ),
    ],
)
async def test_initialize_with_a_wrong_shape_names_the_field(server, connect, params, field):
    client = await connect(server.url)
    with pytest.raises(RpcError) as refused:
        await client.request("initialize", params)
    assert refused.value.code == -32602
    assert field in refused.value.message


async def test_subscribe_without_a_channel_names_the_field(server, connect):
    client = await ready(server, connect)
    with pytest.raises(RpcError) as refused:
        await client.request("subscribe", {})
    assert refused.value.code == -32602
    assert "channel" in refused.value.message


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"channel": ROOT, "action": {"type": "root/configChanged", "config": {}}}, "clientSeq"),
        ({"channel": ROOT, "clientSeq": 1, "action": "nope"}, "action"),
        ({"clientSeq": 1, "action": {"type": "root/configChanged", "config": {}}}, "channel"),
    ],
)
async def test_a_dispatch_that_cannot_be_an_envelope_is_answered_with_an_error(
    server, connect, params, field
):
    client = await ready(server, connect)
    await client.notify("dispatchAction", params)
    error = await client.wait_error_without_id()
    assert error["code"] == -32602
    assert field in error["message"]


async def test_a_root_config_push_of_the_wrong_shape_is_refused_naming_it(server, connect):
    client = await ready(server, connect)
    refusal = await client.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": [1]})
    assert refusal["rejectionReason"] == "root/configChanged: config must be an object"
