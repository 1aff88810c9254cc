"""Root config on several nodes of one host, without Django or sockets: two engines on one
store (as two nodes share one database). A push kept by one is read back by the other as it
hears of it; pushes of two nodes at once, of one key or of two, leave every node as the store
ends, and the store keeps what each moved."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from hosts.engine.host import Host, HostSettings
from hosts.engine.ports import MemoryStore


async def nodes(store: MemoryStore) -> tuple[Host, Host]:
    first, second = Host(store, HostSettings()), Host(store, HostSettings())
    await first.start()
    await second.start()
    return first, second


def values(host: Host) -> dict[str, Any]:
    return host.root.state["config"]["values"]


async def pushed(host: Host, config: dict[str, Any], **extra: Any) -> None:
    action = {"type": "root/configChanged", "config": config, **extra}
    assert await host.change_root_config(action) is None
    await host.writes.flush()
    while host.root_values_ahead() != values(host):
        await asyncio.sleep(0)  # said once committed


async def test_a_push_one_node_kept_is_read_back_by_the_other():
    store = MemoryStore()
    first, second = await nodes(store)
    await pushed(first, {"x-one": 1})
    await second.root_config_said_elsewhere()
    assert values(second)["x-one"] == 1
    assert values(second) == values(first)
    # Said there as what it moved, on the host's account.
    last = orjson.loads(list(second.fanout.ring.since(0))[-1].envelope)
    assert last["action"] == {"type": "root/configChanged", "config": {"x-one": 1}}
    assert "origin" not in last


async def test_pushes_of_two_nodes_at_once_leave_both_as_the_store_ends():
    store = MemoryStore()
    first, second = await nodes(store)
    # Each takes its own push before it hears of the other's.
    await pushed(first, {"x-same": "first", "x-a": 1})
    await pushed(second, {"x-same": "second", "x-b": 2})
    # The store kept what each moved: the key both pushed as it was written last.
    assert store.root_config == {"x-same": "second", "x-a": 1, "x-b": 2}
    # Each hears of the other's, in whichever order: both end as the store is.
    await second.root_config_said_elsewhere()
    await first.root_config_said_elsewhere()
    for host in (first, second):
        assert {k: values(host)[k] for k in ("x-same", "x-a", "x-b")} == store.root_config
    assert values(first) == values(second)


async def test_a_replace_on_one_node_drops_what_it_left_out_on_the_other():
    store = MemoryStore()
    first, second = await nodes(store)
    await pushed(first, {"x-gone": 1})
    await second.root_config_said_elsewhere()
    await pushed(first, {"x-kept": 2}, replace=True)
    await second.root_config_said_elsewhere()
    assert "x-gone" not in values(second)
    assert values(second)["x-kept"] == 2
