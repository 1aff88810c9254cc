"""The fan-out core on its own: no host, no sessions, no ASGI."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from hosts.engine.channel import Channel
from hosts.engine.fanout import Fanout
from hosts.engine.malloc_trim import MemoryReturn
from hosts.engine.principal import Principal
from hosts.engine.replay import seen
from hosts.protocol.uris import ROOT_URI
from tests.support.transport import FakeTransport

ROOT_STATE = {"agents": [], "activeSessions": 0, "config": {"schema": {}, "values": {}}}
EVERYTHING = Principal("root:test", ("*:*",))


def fanout(**kw: Any) -> Fanout:
    settings: dict[str, Any] = {
        "replay_count": 1000,
        "replay_bytes": lambda: 0,
        "queue_limit": 0,
        "told": {"root/configChanged": "config:settings"},
    }
    settings.update(kw)
    return Fanout(**settings)


def watcher(
    core: Fanout, channel: Channel, client_id: str, grants: tuple[str, ...] = ("*:*",)
) -> tuple[Any, FakeTransport]:
    transport = FakeTransport()
    conn = core.connect(transport, client_id)
    conn.client_id, conn.version_text, conn.version = client_id, "1.0.0", (1, 0, 0)
    conn.principal = Principal(f"user:{client_id}", tuple(grants))
    core.subscribe(conn, channel)
    return conn, transport


async def drained(core: Fanout) -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_an_action_is_sequenced_reduced_ringed_and_sent_once_to_each_watcher():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    _, first = watcher(core, root, "a")
    _, second = watcher(core, root, "b")
    seq = core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 2})
    await drained(core)
    assert seq == core.server_seq == 1
    assert root.state["activeSessions"] == 2
    assert [e.server_seq for e in core.ring.since(0)] == [1]
    for transport in (first, second):
        [frame] = transport.sent
        assert frame["params"] == {
            "channel": ROOT_URI,
            "action": {"type": "root/activeSessionsChanged", "activeSessions": 2},
            "serverSeq": 1,
        }
    core.stop()


async def test_a_refusal_takes_a_seq_changes_nothing_and_reaches_a_sender_watching_nothing():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    sender_transport = FakeTransport()
    sender = core.connect(sender_transport, "sender")
    sender.client_id, sender.version = "s", (1, 0, 0)
    action = {"type": "root/activeSessionsChanged", "activeSessions": 9}
    core.emit(root, action, origin={"clientId": "s", "clientSeq": 1}, sender=sender, rejection="no")
    await drained(core)
    assert root.state["activeSessions"] == 0
    [frame] = sender_transport.sent
    assert frame["params"]["rejectionReason"] == "no" and frame["params"]["serverSeq"] == 1
    core.stop()


async def test_an_action_needing_a_grant_goes_only_to_who_holds_it():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    _, admin = watcher(core, root, "admin")
    _, guest = watcher(core, root, "guest", grants=("session:read",))
    core.emit(root, {"type": "root/configChanged", "config": {"x": 1}})
    await drained(core)
    assert len(admin.sent) == 1 and guest.sent == []
    core.stop()


async def test_a_client_past_its_queue_is_dropped_and_its_channels_told_who_left():
    core = fanout(queue_limit=100)
    core.start()
    left: list[tuple[str, list[str], bool]] = []
    core.on_left(
        lambda client, channels, dropped: left.append((client, [c.uri for c in channels], dropped))
    )
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    slow_conn, slow = watcher(core, root, "slow")
    _, quick = watcher(core, root, "quick")
    slow.held = 1000
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    await drained(core)
    assert slow.aborted and slow_conn.closed and slow_conn not in root.subscribers
    assert left == [("slow", [ROOT_URI], True)]
    assert len(quick.sent) == 1
    core.stop()


async def test_closing_a_channel_unsubscribes_its_watchers_and_says_so():
    core = fanout()
    left: list[tuple[str, bool]] = []
    core.on_left(lambda client, channels, dropped: left.append((client, dropped)))
    channel = core.open(Channel("ahp-session:/x", "session", {}))
    conn, _ = watcher(core, channel, "a")
    assert core.watching("a", ["ahp-session:/x"])
    core.close("ahp-session:/x")
    assert core.channel("ahp-session:/x") is None
    assert conn.subscriptions == {} and not core.watching("a", ["ahp-session:/x"])
    assert left == [("a", False)]


def test_every_spelling_of_the_root_finds_the_root():
    core = fanout()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    assert core.channel("ahp-root:") is root and core.channel("ahp-root:///") is root


async def test_an_action_that_cannot_be_said_takes_no_seq_and_changes_no_state():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    _, transport = watcher(core, root, "a")
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    # An integer past 64 bits is one orjson cannot write: the envelope fails part way.
    unsayable = {"type": "root/activeSessionsChanged", "activeSessions": 2**70}
    try:
        core.emit(root, unsayable)
    except TypeError:
        pass
    else:
        raise AssertionError("an envelope orjson cannot write was said")
    assert core.server_seq == 1
    assert root.state["activeSessions"] == 1
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 3})
    await drained(core)
    # No gap: everything after 0 replays, in order, and the watcher was sent the same.
    assert [e.server_seq for e in core.ring.since(0)] == [1, 2]
    assert [f["params"]["serverSeq"] for f in transport.sent] == [1, 2]
    core.stop()


async def test_a_sender_only_echo_is_said_and_replayed_to_its_sender_alone():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    sender, mine = watcher(core, root, "s")
    _, theirs = watcher(core, root, "o")
    action = {"type": "root/activeSessionsChanged", "activeSessions": 0}
    seq = core.emit(
        root,
        action,
        origin={"clientId": "s", "clientSeq": 1},
        sender=sender,
        reduce_state=False,
        sender_only=True,
    )
    await drained(core)
    assert [f["params"]["serverSeq"] for f in mine.sent] == [seq]
    assert theirs.sent == []
    [entry] = core.ring.since(0)
    assert entry.owed("s", {ROOT_URI}, (1, 0, 0), lambda _: True)
    assert not entry.owed("o", {ROOT_URI}, (1, 0, 0), lambda _: True)
    core.stop()


def test_the_replay_ring_finds_what_follows_a_seq_across_a_gap():
    from hosts.engine.replay import Entry, ReplayRing

    ring = ReplayRing(10, lambda: 0)
    for seq in (1, 2, 5, 6):
        ring.append(Entry(seq, ROOT_URI, "{}", 2, (1, 0, 0), None))
    assert [e.server_seq for e in ring.since(2)] == [5, 6]
    assert [e.server_seq for e in ring.since(3)] == [5, 6]
    assert [e.server_seq for e in ring.since(0)] == [1, 2, 5, 6]
    assert list(ring.since(6)) == []


async def test_a_viewed_action_is_held_whole_and_told_to_each_principal_as_they_see_it():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    # A stand-in view: a principal is told the count only if they may read sessions.
    core.action_views["root/activeSessionsChanged"] = lambda principal, action: (
        action if principal.may("session:list") else {**action, "activeSessions": 0}
    )
    _, reader = watcher(core, root, "a", ("session:read",))
    _, other = watcher(core, root, "b", ("file:read",))
    _, same = watcher(core, root, "c", ("file:read",))
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 4})
    await drained(core)
    assert root.state["activeSessions"] == 4
    assert reader.sent[0]["params"]["action"]["activeSessions"] == 4
    assert other.sent[0]["params"]["action"]["activeSessions"] == 0
    assert same.sent[0]["params"]["action"]["activeSessions"] == 0
    # Ringed whole, and replayed through the same view.
    [entry] = core.ring.since(0)
    assert entry.viewed and '"activeSessions":4' in entry.envelope
    told = seen(entry.envelope, Principal("user:d", ("file:read",)), core.action_views)
    assert '"activeSessions":0' in told and '"serverSeq":1' in told
    core.stop()


async def test_past_the_total_bound_the_clients_furthest_behind_are_dropped():
    core = fanout(total_limit=1000)
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    furthest_conn, furthest = watcher(core, root, "furthest")
    behind_conn, behind = watcher(core, root, "behind")
    _, reading = watcher(core, root, "reading")
    furthest.held, behind.held = 700, 400
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    await drained(core)
    # Together past the bound: the one furthest behind goes, and the rest fit.
    assert furthest.aborted and furthest_conn.closed
    assert not behind.aborted and not behind_conn.closed
    assert len(reading.sent) == 1 and len(behind.sent) == 1
    assert core.queue_drops == 1
    core.stop()


async def test_a_client_that_caught_up_since_is_not_counted_against_the_others():
    core = fanout(total_limit=1000)
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    other = core.open(Channel("ahp-session:/other", "session", {}))
    was_behind_conn, was_behind = watcher(core, root, "was-behind")
    behind_conn, behind = watcher(core, other, "behind")
    was_behind.held = 900
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    await drained(core)
    # It caught up, and is sent nothing more: the total still has it 900 behind, until the
    # total past the bound is counted again.
    was_behind.held, behind.held = 0, 500
    core.emit(other, {"type": "session/titleChanged", "title": "x"}, reduce_state=False)
    await drained(core)
    assert not was_behind_conn.closed and not behind_conn.closed
    assert core.queued_total == 500
    # A client gone takes its part away.
    core.disconnect(behind_conn)
    assert core.queued_total == 0
    core.stop()


async def test_memory_is_given_back_once_however_many_clients_go_at_once():
    trimmed = asyncio.Event()
    calls: list[int] = []
    loop = asyncio.get_running_loop()

    def trim(pad: int) -> int:
        calls.append(pad)
        loop.call_soon_threadsafe(trimmed.set)
        return 1

    core = fanout(give_back=MemoryReturn(every_s=3600, trim=trim))
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    conns = [watcher(core, root, f"c{n}")[0] for n in range(3)]
    for conn in conns:
        core.disconnect(conn)
    await asyncio.wait_for(trimmed.wait(), 10)
    await drained(core)
    # The first close trims at once; the next waits out the hour, whatever closes meanwhile.
    assert calls == [0]
    core.stop()


class DirectTransport(FakeTransport):
    """A transport that writes straight to its socket, as daphne's does: each call is a write
    (one system call), kept as the list of frames it carried; `refuse` turns it into one that
    cannot (the frames then go through the flusher)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[list[str]] = []
        self.refuse = False

    def write_now(self, texts: list[str]) -> bool:
        if self.refuse:
            return False
        self.writes.append(list(texts))
        self.sent.extend(orjson.loads(t) for t in texts)
        return True


async def test_actions_said_in_one_pass_reach_each_watcher_in_one_write_in_order():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    transports = []
    for name in ("a", "b"):
        transport = DirectTransport()
        conn = core.connect(transport, name)
        conn.client_id, conn.version_text, conn.version = name, "1.0.0", (1, 0, 0)
        conn.principal = EVERYTHING
        core.subscribe(conn, root)
        transports.append(transport)
    # Three actions in one pass of the loop (a burst read from one client), then one alone.
    for count in (1, 2, 3):
        core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": count})
    await drained(core)
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 4})
    await drained(core)
    for transport in transports:
        assert [len(frames) for frames in transport.writes] == [3, 1]
        assert [a["serverSeq"] for a in transport.actions()] == [1, 2, 3, 4]


async def test_a_pass_the_socket_cannot_take_goes_to_the_flusher_behind_nothing():
    core = fanout()
    core.start()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    transport = DirectTransport()
    conn = core.connect(transport, "a")
    conn.client_id, conn.version_text, conn.version = "a", "1.0.0", (1, 0, 0)
    conn.principal = EVERYTHING
    core.subscribe(conn, root)
    transport.refuse = True
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 2})
    await drained(core)
    # The flusher could not write either (send_batch took them), and kept their order; what
    # follows once the socket takes writes again comes after them.
    transport.refuse = False
    core.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": 3})
    await drained(core)
    assert [a["serverSeq"] for a in transport.actions()] == [1, 2, 3]
    assert conn.outbox_bytes == 0 and not conn.outbox and not conn.this_pass
