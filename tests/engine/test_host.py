"""The engine without Django or sockets: delivery, version gating, the replay ring, the queue,
through the router as a socket's frames reach it."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from hosts.engine.host import Host, HostSettings
from hosts.engine.ports import MemoryStore
from hosts.engine.replay import Entry, ReplayRing
from hosts.engine.router import Router
from hosts.protocol import jsonrpc
from hosts.protocol.uris import ROOT_URI
from tests.support.transport import FakeTransport

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


async def started_host(**settings: Any) -> Host:
    host = Host(MemoryStore(), HostSettings(**settings))
    await host.start()
    return host


async def handshake(host: Host, version: str, client_id: str) -> tuple[Any, FakeTransport]:
    transport = FakeTransport()
    conn = host.connect(transport, "test")
    await Router(host).receive(
        conn,
        jsonrpc.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "channel": ROOT_URI,
                    "protocolVersions": [version],
                    "clientId": client_id,
                    "initialSubscriptions": [ROOT_URI],
                },
            }
        ),
    )
    return conn, transport


async def flushed() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_an_action_goes_only_to_connections_whose_version_knows_it():
    host = await started_host()
    _, old = await handshake(host, "0.9.0", "old")
    _, new = await handshake(host, "0.10.0", "new")
    root = host.root
    # chat/canvasesChanged was introduced in 0.10.0; its reducer is not root's, so say it as a
    # host envelope without reducing, which is all this test is about.
    host.fanout.emit(root, {"type": "chat/canvasesChanged", "canvases": []}, reduce_state=False)
    host.fanout.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 0})
    await flushed()
    assert [a["action"]["type"] for a in new.actions()] == [
        "chat/canvasesChanged",
        "root/activeSessionsChanged",
    ]
    assert [a["action"]["type"] for a in old.actions()] == ["root/activeSessionsChanged"]
    await host.stop()


async def test_a_replay_holds_back_what_the_clients_version_does_not_know():
    host = await started_host()
    conn, old = await handshake(host, "0.9.0", "old")
    root = host.root
    host.fanout.emit(root, {"type": "chat/canvasesChanged", "canvases": []}, reduce_state=False)
    host.fanout.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 0})
    host.disconnect(conn)
    again = host.connect(FakeTransport(), "test")
    answer = await Router(host).handle(
        again,
        jsonrpc.Incoming(
            2,
            True,
            "reconnect",
            {"clientId": "old", "lastSeenServerSeq": 0, "subscriptions": [ROOT_URI]},
        ),
    )
    assert answer is not None
    result = orjson.loads(answer)["result"]
    assert [a["action"]["type"] for a in result["actions"]] == ["root/activeSessionsChanged"]
    await host.stop()


async def test_a_client_past_its_queue_limit_is_aborted_and_others_are_not():
    host = await started_host(client_queue_bytes=1024 * 1024)
    slow_conn, slow = await handshake(host, "1.0.0", "slow")
    _, quick = await handshake(host, "1.0.0", "quick")
    await flushed()
    slow.held = 2 * 1024 * 1024
    host.fanout.emit(host.root, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    await flushed()
    assert slow.aborted and slow_conn.closed
    assert slow_conn not in host.root.subscribers
    assert not quick.aborted and quick.actions()
    await host.stop()


def entry(seq: int, size: int) -> Entry:
    return Entry(seq, ROOT_URI, "{}", size, (1, 0, 0), None)


def test_the_ring_keeps_the_last_thousand():
    ring = ReplayRing(1000, lambda: 0)
    for seq in range(1, 1501):
        ring.append(entry(seq, 10))
    assert len(ring) == 1000
    assert ring.oldest_seq == 501
    assert [e.server_seq for e in ring.since(1495)] == [1496, 1497, 1498, 1499, 1500]


def test_the_ring_drops_the_oldest_past_its_byte_bound_but_keeps_the_newest():
    limit = [100]
    ring = ReplayRing(1000, lambda: limit[0])
    for seq in range(1, 6):
        ring.append(entry(seq, 30))
    assert [e.server_seq for e in ring.since(0)] == [3, 4, 5]
    ring.append(entry(6, 500))
    assert [e.server_seq for e in ring.since(0)] == [6]


def test_the_ring_covers_a_client_that_saw_the_oldest_it_holds_or_is_ahead():
    ring = ReplayRing(3, lambda: 0)
    assert ring.covers(0, 0)
    for seq in range(1, 6):
        ring.append(entry(seq, 1))
    assert ring.oldest_seq == 3
    assert ring.covers(2, 5)
    assert not ring.covers(1, 5)
    assert ring.covers(99, 5)


async def test_a_root_config_value_kept_too_deep_to_say_is_not_read_back():
    store = MemoryStore()
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    await store.save_root_config({"x-poison": deep, "x-fine": 1})
    host = Host(store, HostSettings())
    await host.start()
    values = host.root.state["config"]["values"]
    assert "x-poison" not in values and values["x-fine"] == 1
    _, transport = await handshake(host, "1.0.0", "after")
    await flushed()
    [answer] = transport.sent
    assert answer["result"]["snapshots"][0]["state"]["config"]["values"]["x-fine"] == 1
