"""reconnect: replay out of the ring, whole snapshots past it, and missing subscriptions."""

from __future__ import annotations

import uuid

ROOT = "ahp-root://"
MIB = 1024 * 1024


def push(**values: object) -> dict[str, object]:
    return {"type": "root/configChanged", "config": values}


async def test_a_dropped_client_is_replayed_what_it_missed(server, connect):
    a = await connect(server.url, client_id=f"replay-{uuid.uuid4().hex[:6]}")
    await a.initialize()
    b = await connect(server.url)
    await b.initialize()
    mark = await b.dispatch_and_wait(ROOT, push(**{"x-before": uuid.uuid4().hex}))
    await a.wait_action(lambda e: e["serverSeq"] == mark["serverSeq"])
    last_seen = a.last_seq
    await a.close()

    missed = [
        await b.dispatch_and_wait(ROOT, push(**{"x-missed": uuid.uuid4().hex})) for _ in range(3)
    ]

    again = await connect(server.url, client_id=a.client_id)
    result = await again.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": a.client_id,
            "lastSeenServerSeq": last_seen,
            "subscriptions": [ROOT, "ahp-session:/gone"],
        },
    )
    assert result["type"] == "replay"
    assert result["missing"] == ["ahp-session:/gone"]
    replayed = [e["serverSeq"] for e in result["actions"]]
    for envelope in missed:
        assert envelope["serverSeq"] in replayed
    assert all(seq > last_seen for seq in replayed)
    assert replayed == sorted(replayed)
    # And it is subscribed again from the live edge.
    live = await b.dispatch_and_wait(ROOT, push(**{"x-live": uuid.uuid4().hex}))
    await again.wait_action(lambda e: e["serverSeq"] == live["serverSeq"])


async def test_a_client_ahead_of_the_host_is_replayed_nothing(server, connect):
    a = await connect(server.url, client_id=f"ahead-{uuid.uuid4().hex[:6]}")
    await a.initialize()
    result = await a.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": a.client_id,
            "lastSeenServerSeq": 10**9,
            "subscriptions": [ROOT],
        },
    )
    assert result == {"type": "replay", "actions": [], "missing": []}


async def test_past_the_replay_buffer_a_reconnect_gets_whole_snapshots(server, connect):
    a = await connect(server.url, client_id=f"snap-{uuid.uuid4().hex[:6]}")
    await a.initialize()
    b = await connect(server.url)
    await b.initialize()
    await b.dispatch_and_wait(ROOT, push(replayBytes=MIB))
    last_seen = (await b.dispatch_and_wait(ROOT, push(**{"x-old": uuid.uuid4().hex})))["serverSeq"]
    await a.close()
    # Each envelope weighs ~200 KiB, so a handful push the old ones out of a 1 MiB ring.
    for _ in range(8):
        await b.dispatch_and_wait(ROOT, push(**{"x-big": uuid.uuid4().hex * 6000}))
    again = await connect(server.url, client_id=a.client_id)
    result = await again.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": a.client_id,
            "lastSeenServerSeq": last_seen,
            "subscriptions": [ROOT],
        },
    )
    assert result["type"] == "snapshot"
    [snapshot] = result["snapshots"]
    assert snapshot["resource"] == ROOT
    assert (
        snapshot["state"]["config"]["values"]["x-big"]
        == b.tracked[ROOT][0]["config"]["values"]["x-big"]
    )
    await b.dispatch_and_wait(ROOT, push(replayBytes=32 * MIB))
