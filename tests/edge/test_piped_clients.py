"""A client piped to the node that met it (other_nodes/piped_clients.py), between two engines
over the channel layer (the in-memory layer on the embedded default, Redis with REDIS_URL):
its reconnect to the other node is answered by the node that met it, from that node's ring,
and so is every later frame; the pipe ends with the socket, or with that node's close."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from channels.layers import get_channel_layer

from hosts.edge import runtime
from hosts.edge.relay import LayerRelay
from hosts.engine.connection import Connection
from hosts.engine.host import Host, HostSettings
from hosts.engine.placement import Elsewhere, Found, engine_channel
from hosts.engine.ports import MemoryStore
from hosts.engine.router import Router
from hosts.protocol.uris import ROOT_URI
from tests.support.transport import FakeTransport


class TwoNodes:
    """A node of a host of two, each live to the other; every session this one's."""

    def __init__(self, node_id: str, other: str) -> None:
        self.node_id = node_id
        self._other = other

    async def find(self, uri: str) -> Found:
        return Found(None)

    async def place_new(self, folder: Path | None, provider: object) -> Elsewhere | None:
        return None

    async def held(self) -> set[str]:
        return set()

    async def others(self) -> list[str]:
        return [self._other]


class Socket(FakeTransport):
    def __init__(self) -> None:
        super().__init__()
        self.code: int | None = None

    async def close(self, code: int, reason: str) -> None:
        self.code = code
        await super().close(code, reason)

    def answer(self, request_id: int) -> dict[str, Any] | None:
        return next((f for f in self.sent if f.get("id") == request_id), None)


@dataclass
class Node:
    host: Host
    router: Router

    async def frame(self, conn: Connection, request_id: int, method: str, **params: Any) -> None:
        text = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self.router.receive(conn, orjson.dumps(text).decode())


@pytest.fixture
async def nodes() -> AsyncIterator[tuple[Node, Node]]:
    layer = get_channel_layer()
    tag = uuid.uuid4().hex[:8]
    ids = (f"met-{tag}", f"other-{tag}")
    made, inboxes = [], []
    for me, other in (ids, ids[::-1]):
        host = Host(
            MemoryStore(), HostSettings(), placement=TwoNodes(me, other), relay=LayerRelay(layer)
        )
        router = Router(host)
        host.pipes.receive = router.receive
        await host.start()
        inboxes.append(asyncio.create_task(runtime._read_inbox(host, engine_channel(me))))
        made.append(Node(host, router))
    yield made[0], made[1]
    for inbox in inboxes:
        inbox.cancel()
    for node in made:
        await node.host.stop()


async def answered(socket: Socket, request_id: int) -> dict[str, Any]:
    async def found() -> dict[str, Any]:
        while (frame := socket.answer(request_id)) is None:
            await asyncio.sleep(0.01)
        return frame

    return await asyncio.wait_for(found(), 10)


async def met_then_gone(met: Node, other: Node, client_id: str) -> int:
    """The client meets `met` (its handshake there), is told an action, and drops; `other` is
    told it met the client (as every node is). The serverSeq it saw last."""
    socket = Socket()
    conn = met.host.connect(socket, "first socket")
    await met.frame(
        conn,
        1,
        "initialize",
        channel=ROOT_URI,
        protocolVersions=["1.0.0"],
        clientId=client_id,
        initialSubscriptions=[ROOT_URI],
    )
    seen = (await answered(socket, 1))["result"]["serverSeq"]
    met.host.disconnect(conn)
    other.host.clients.met_elsewhere(
        met.host.placement.node_id, client_id, "1.0.0", conn.principal.ref, None
    )
    # Said while it was away.
    push = {"type": "root/configChanged", "config": {"x-away": 1}}
    assert await met.host.change_root_config(push) is None
    await met.host.writes.flush()
    while met.host.fanout.server_seq == seen:
        await asyncio.sleep(0.01)
    return int(seen)


async def test_a_reconnect_to_another_node_is_replayed_by_the_node_that_met_it(nodes):
    met, other = nodes
    seen = await met_then_gone(met, other, "c1")
    socket = Socket()
    conn = other.host.connect(socket, "second socket")
    params = {"channel": ROOT_URI, "clientId": "c1", "lastSeenServerSeq": seen}
    await other.frame(conn, 2, "reconnect", subscriptions=[ROOT_URI], **params)
    result = (await answered(socket, 2))["result"]
    assert result["type"] == "replay"
    assert [a["action"]["type"] for a in result["actions"]] == ["root/configChanged"]
    assert result["actions"][0]["serverSeq"] > seen
    # Every later frame is answered there too.
    await other.frame(conn, 3, "listSessions", channel=ROOT_URI)
    assert (await answered(socket, 3))["result"]["items"] == []
    held = [c for c in met.host.fanout.connections if c.client_id == "c1"]
    assert len(held) == 1 and not held[0].closed

    # The socket closes: the node that met it lets the connection go, and holds the client
    # as one gone.
    other.host.disconnect(conn)
    while met.host.fanout.connections & set(held):
        await asyncio.sleep(0.01)
    record = met.host.clients.get("c1")
    assert record is not None and record.gone_since is not None


async def test_the_close_of_the_node_that_holds_a_piped_client_reaches_its_socket(nodes):
    met, other = nodes
    seen = await met_then_gone(met, other, "c2")
    socket = Socket()
    conn = other.host.connect(socket, "second socket")
    params = {"channel": ROOT_URI, "clientId": "c2", "lastSeenServerSeq": seen}
    await other.frame(conn, 2, "reconnect", subscriptions=[ROOT_URI], **params)
    await answered(socket, 2)
    [held] = [c for c in met.host.fanout.connections if c.client_id == "c2"]
    await met.host.fanout.close_one(held, 4001, "going")
    await asyncio.wait_for(_closed(socket), 10)
    assert socket.code == 4001
    # Told by its socket's end, the pipe is gone both ways.
    other.host.disconnect(conn)
    assert not other.host.pipes.piped(conn)


async def test_another_persons_reconnect_under_the_id_is_not_piped(nodes):
    met, other = nodes
    seen = await met_then_gone(met, other, "c3")
    other.host.clients.met_elsewhere(met.host.placement.node_id, "c3", "1.0.0", "user:ana", None)
    socket = Socket()
    conn = other.host.connect(socket, "someone else")
    params = {"channel": ROOT_URI, "clientId": "c3", "lastSeenServerSeq": seen}
    await other.frame(conn, 2, "reconnect", subscriptions=[ROOT_URI], **params)
    error = (await answered(socket, 2))["error"]
    assert error["code"] == -32008
    assert not other.host.pipes.piped(conn)
    assert not [c for c in met.host.fanout.connections if c.client_id == "c3"]
    other.host.disconnect(conn)


async def _closed(socket: Socket) -> None:
    while socket.code is None:
        await asyncio.sleep(0.01)
