"""initialize, ping, reconnect-first and the methods a connection may not send yet."""

from __future__ import annotations

import uuid

import pytest

from tests.support.client import RpcError

ROOT = "ahp-root://"


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (["0.9.0", "1.0.0"], "1.0.0"),
        (["0.10.0", "0.9.0"], "0.10.0"),
        (["0.9.0"], "0.9.0"),
        (["0.8.0", "0.9.3"], "0.9.3"),
        (["1.1.0", "0.9.0"], "1.1.0"),
    ],
)
async def test_initialize_answers_the_highest_offered_version_it_speaks(
    server, connect, offered, chosen
):
    client = await connect(server.url)
    result = await client.initialize(offered)
    assert result["protocolVersion"] == chosen
    assert result["serverInfo"]["name"] == "ahpd"
    assert isinstance(result["serverSeq"], int)


@pytest.mark.parametrize("offered", [["2.0.0"], ["0.8.0", "0.11.0"]])
async def test_initialize_with_no_common_version_is_refused_with_the_supported_list(
    server, connect, offered
):
    client = await connect(server.url)
    with pytest.raises(RpcError) as refused:
        await client.initialize(offered)
    assert refused.value.code == -32005
    assert refused.value.data == {"supportedVersions": ["1.0.0", "0.10.0", "0.9.0"]}
    # The connection is still there, and a second offer can still succeed.
    assert (await client.initialize(["1.0.0"]))["protocolVersion"] == "1.0.0"


async def test_an_offer_of_a_future_major_is_refused_though_its_minor_is_a_baselines(
    server, connect
):
    # 9.9.9 shares 0.9.0's minor, but ^0.9.0 is >=0.9.0 <0.10.0: no baseline's range holds it.
    client = await connect(server.url)
    with pytest.raises(RpcError) as refused:
        await client.initialize(["9.9.9"])
    assert refused.value.code == -32005
    assert refused.value.data == {"supportedVersions": ["1.0.0", "0.10.0", "0.9.0"]}


@pytest.mark.parametrize("entry", ["1.0", "01.0.0", "1.0.0-beta", "1.0.0+build", 7])
async def test_an_entry_that_is_not_major_minor_patch_is_invalid_params_naming_it(
    server, connect, entry
):
    client = await connect(server.url)
    with pytest.raises(RpcError) as refused:
        await client.initialize(["1.0.0", entry])
    assert refused.value.code == -32602
    assert repr(entry) in refused.value.message


async def test_initial_subscriptions_come_back_as_snapshots(server, connect):
    client = await connect(server.url)
    result = await client.initialize(subscriptions=[ROOT, "ahp-session:/nobody-has-this"])
    assert [s["resource"] for s in result["snapshots"]] == [ROOT]
    snapshot = result["snapshots"][0]
    assert snapshot["fromSeq"] == result["serverSeq"]
    state = snapshot["state"]
    assert state["agents"] == []
    assert state["activeSessions"] == 0
    assert state["config"]["schema"]["properties"]["clientQueueBytes"]["type"] == "number"
    assert state["config"]["values"]["clientQueueBytes"] >= 1024 * 1024


async def test_ping_is_answered_before_initialize(server, connect):
    client = await connect(server.url)
    assert await client.request("ping", {"channel": ROOT}) is None


async def test_ping_takes_any_channel(server, connect):
    client = await connect(server.url)
    assert await client.request("ping", {"channel": "ahp-session:/whatever"}) is None


@pytest.mark.parametrize("method", ["subscribe", "listSessions", "createSession"])
async def test_other_methods_before_initialize_are_refused(server, connect, method):
    client = await connect(server.url)
    with pytest.raises(RpcError) as refused:
        await client.request(method, {"channel": ROOT})
    assert refused.value.code in (-32600, -32601)
    assert await client.request("ping", {"channel": ROOT}) is None


async def test_initialize_twice_is_refused(server, connect):
    client = await connect(server.url)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.initialize()
    assert refused.value.code == -32600


async def test_reconnect_is_accepted_as_the_first_request(server, connect):
    first = await connect(server.url, client_id="window-1")
    await first.initialize(["0.10.0"])
    await first.close()
    second = await connect(server.url, client_id="window-1")
    result = await second.request(
        "reconnect",
        {"channel": ROOT, "clientId": "window-1", "lastSeenServerSeq": 0, "subscriptions": [ROOT]},
    )
    assert result["type"] in ("replay", "snapshot")
    # Subscribed: a config push from another client reaches it.
    other = await connect(server.url)
    await other.initialize()
    mark = {"x-reconnect": uuid.uuid4().hex}
    await other.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": mark})
    await second.wait_action(lambda e: e["action"].get("config") == mark)


async def test_reconnect_of_a_client_nobody_knows_is_not_found(server, connect):
    client = await connect(server.url)
    with pytest.raises(RpcError) as refused:
        await client.request(
            "reconnect",
            {
                "channel": ROOT,
                "clientId": "never-seen",
                "lastSeenServerSeq": 0,
                "subscriptions": [],
            },
        )
    assert refused.value.code == -32008
    assert refused.value.message == "Reconnect client not found: never-seen"


async def test_a_literal_channel_command_on_another_channel_says_which_is_right(server, connect):
    client = await connect(server.url, client_id="literal-1")
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request(
            "reconnect",
            {
                "channel": "ahp-session:/x",
                "clientId": "literal-1",
                "lastSeenServerSeq": 0,
                "subscriptions": [],
            },
        )
    assert refused.value.code == -32602
    assert "ahp-root://" in refused.value.message


@pytest.mark.parametrize("method", ["noSuchMethod", "noSuchMethodEither"])
async def test_a_method_not_served_is_method_not_found_never_an_empty_success(
    server, connect, method
):
    client = await connect(server.url)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request(method, {"channel": ROOT})
    assert refused.value.code == -32601
    assert method in refused.value.message
