"""The watch registry on its own, with time moved on by hand: a watch is released once the
grace after its last watcher has passed, and a subscribe within the grace calls that off; a
watch over a client's files asks that client, and lets go of its channel when released."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hosts.engine.changesets import watching
from hosts.engine.channel import Channel
from hosts.engine.client_requests import ClientRequests
from hosts.engine.clients import Clients
from hosts.engine.fanout import Fanout
from hosts.engine.folder_watchers import FolderWatchers, Notifier
from hosts.engine.resources.served import Served
from hosts.engine.resources.watches import Watches
from hosts.protocol import jsonrpc
from hosts.protocol.errors import ProtocolError
from tests.engine.test_fanout import drained, fanout, watcher
from tests.support.transport import FakeTransport

GRACE_S = 30.0


@dataclass
class Timer:
    delay: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class Clock:
    """What is put off runs when the test says the time has come, not before."""

    def __init__(self) -> None:
        self.timers: list[Timer] = []

    def later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(delay, callback)
        self.timers.append(timer)
        return timer

    @property
    def pending(self) -> list[Timer]:
        return [timer for timer in self.timers if not timer.cancelled]

    async def pass_grace(self) -> None:
        """The grace is over: each release put off runs (and what it started finishes)."""
        due, self.timers = self.pending, []
        for timer in due:
            timer.callback()
        for _ in range(5):
            await asyncio.sleep(0)


@dataclass
class Registry:
    core: Fanout
    clients: Clients
    client_requests: ClientRequests
    watches: Watches


def registry(
    folder: Path, clock: Clock, per_person: int = 0, folders: FolderWatchers | None = None
) -> Registry:
    core = fanout()
    core.start()
    clients = Clients(ttl_s=300)
    asks = ClientRequests(core, clients)
    watches = Watches(
        core,
        Served([folder]),
        asks,
        GRACE_S,
        later=clock.later,
        folders=folders,
        per_person=per_person,
    )
    return Registry(core, clients, asks, watches)


async def a_watch(folder: Path) -> tuple[Clock, Registry, Channel]:
    clock = Clock()
    made = registry(folder, clock)
    uri = await made.watches.create({"uri": folder.as_uri(), "recursive": True}, "user:a")
    channel = made.core.channel(uri)
    assert channel is not None
    return clock, made, channel


async def test_a_watch_nobody_subscribes_to_is_released_after_the_grace(tmp_path):
    clock, made, channel = await a_watch(tmp_path)
    [timer] = clock.pending
    assert timer.delay == GRACE_S and made.watches.is_open(channel.uri)
    await clock.pass_grace()
    assert not made.watches.is_open(channel.uri) and not made.core.has(channel.uri)


async def test_the_last_watcher_gone_releases_the_watcher_after_the_grace(tmp_path):
    clock, made, channel = await a_watch(tmp_path)
    first, _ = watcher(made.core, channel, "a")
    second, _ = watcher(made.core, channel, "b")
    assert clock.pending == [] and made.watches.watching == 1
    made.core.unsubscribe(first, channel)
    assert clock.pending == []  # one still watches
    made.core.disconnect(second)  # a connection closing leaves as an unsubscribe does
    [grace] = clock.pending
    assert grace.delay == GRACE_S
    # Within the grace the watcher runs on, and the channel is there to come back to.
    assert made.watches.watching == 1 and made.core.has(channel.uri)
    await clock.pass_grace()
    assert made.watches.watching == 0
    assert not made.watches.is_open(channel.uri) and not made.core.has(channel.uri)
    # Named again, the channel is made again from its name (and watched at its subscribe).
    made.watches.wake(channel.uri)
    assert made.core.has(channel.uri)
    await made.watches.stop()


async def test_a_subscribe_within_the_grace_calls_the_release_off(tmp_path):
    clock, made, channel = await a_watch(tmp_path)
    conn, _ = watcher(made.core, channel, "a")
    made.core.unsubscribe(conn, channel)
    [grace] = clock.pending
    back, _ = watcher(made.core, channel, "a")
    assert grace.cancelled and clock.pending == []
    await clock.pass_grace()
    assert made.watches.watching == 1 and made.core.channel(channel.uri) is channel
    assert channel.subscribers == {back: None}
    await made.watches.stop()


def introduced(made: Registry, client_id: str, who: str) -> tuple[Any, FakeTransport]:
    """A client's connection, through its handshake as far as the registry cares."""
    transport = FakeTransport()
    conn = made.core.connect(transport, client_id)
    conn.client_id, conn.version_text, conn.version = client_id, "1.0.0", (1, 0, 0)
    conn.principal = conn.principal.__class__(who, ("*:*",))
    made.clients.remember(conn)
    made.client_requests.arrived(conn)
    return conn, transport


async def answer(made: Registry, conn: Any, transport: FakeTransport, result: Any) -> str:
    """Answer the last request the host sent the client; its method."""
    await drained(made.core)
    request = [frame for frame in transport.sent if "id" in frame and "method" in frame][-1]
    made.client_requests.answered(conn, jsonrpc.Response(request["id"], result))
    await drained(made.core)
    return str(request["method"])


async def test_a_released_client_watch_lets_go_of_the_clients_channel(tmp_path):
    clock = Clock()
    made = registry(tmp_path, clock)
    laptop, sent = introduced(made, "laptop", "user:a")
    root = "vscode-agent-client://laptop/file/-/home/me"
    creating = asyncio.create_task(made.watches.create({"uri": root}, "user:a"))
    assert await answer(made, laptop, sent, {"uri": "file:///home/me", "type": "directory"}) == (
        "resourceResolve"
    )
    channel = made.core.channel(await creating)
    assert channel is not None
    window, _ = watcher(made.core, channel, "window")
    attaching = asyncio.create_task(made.watches.attached(channel.uri))
    assert await answer(made, laptop, sent, {"channel": "theirs"}) == "createResourceWatch"
    assert await answer(made, laptop, sent, {}) == "subscribe"
    await attaching
    made.core.unsubscribe(window, channel)
    await clock.pass_grace()
    assert sent.sent[-1] == {
        "jsonrpc": "2.0",
        "method": "unsubscribe",
        "params": {"channel": "theirs"},
    }
    # Released, the client's envelopes on its channel are nobody's to take.
    assert not made.client_requests.took_action(laptop, {"channel": "theirs", "action": {}})
    await made.watches.stop()


async def test_a_person_past_the_cap_is_refused_naming_the_setting(tmp_path):
    clock = Clock()
    made = registry(tmp_path, clock, per_person=2)
    first = await made.watches.create({"uri": tmp_path.as_uri()}, "user:a")
    await made.watches.create({"uri": tmp_path.as_uri(), "recursive": True}, "user:a")
    with pytest.raises(ProtocolError) as refused:
        await made.watches.create(
            {"uri": (tmp_path / ".").as_uri(), "excludes": {"items": ["x"]}}, "user:a"
        )
    assert refused.value.code == -32009
    assert refused.value.message == (
        "user:a already holds 2 resource watches, the most one person may hold "
        "(AHPD_WATCHES_PER_PERSON=2): unsubscribe from one (a watch nobody subscribes to is "
        "let go 30 s later)"
    )
    # A watch they hold already is theirs to ask for again; another person holds their own.
    assert await made.watches.create({"uri": tmp_path.as_uri()}, "user:a") == first
    other = await made.watches.create(
        {"uri": tmp_path.as_uri(), "excludes": {"items": ["b"]}}, "user:b"
    )
    # Subscribing to a watch someone else made counts too, and is refused past the cap.
    channel = made.core.channel(other)
    assert channel is not None
    said = made.watches.refusal("user:a", channel)
    assert said is not None and "AHPD_WATCHES_PER_PERSON=2" in said.message
    assert made.watches.refusal("user:b", channel) is None
    # Let go after the grace, a person's watches are theirs to make again.
    await clock.pass_grace()
    await made.watches.create({"uri": tmp_path.as_uri(), "excludes": {"items": ["x"]}}, "user:a")
    await made.watches.stop()


class Refusing:
    """Makes no OS watch: the system is out of inotify instances."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self, folder: Path, recursive: bool) -> Notifier:
        self.asked += 1
        raise RuntimeError("Error creating recommended watcher: Too many open files (os error 24)")


async def test_a_watch_the_system_refuses_fails_its_subscribe_in_one_line(tmp_path, caplog):
    clock = Clock()
    refusing = Refusing()
    made = registry(tmp_path, clock, folders=FolderWatchers(100, make=refusing))
    uri = await made.watches.create({"uri": tmp_path.as_uri()}, "user:a")
    channel = made.core.channel(uri)
    assert channel is not None
    watcher(made.core, channel, "a")
    with caplog.at_level(logging.WARNING, "ahpd.engine"), pytest.raises(ProtocolError) as refused:
        await made.watches.attached(uri)
    assert refused.value.code == -32603
    assert refused.value.message.startswith(f"Cannot watch {tmp_path.as_uri()}: the system")
    # Other tests' tasks on the session's loop may log too: this folder's lines are counted.
    [line] = [r for r in caplog.records if str(tmp_path) in r.getMessage()]
    assert line.levelno == logging.WARNING and line.exc_info is None
    assert "Too many open files" in line.getMessage()
    assert made.watches.folders.count == 0 and made.watches.watching == 0
    # The next subscriber asks the system again.
    watcher(made.core, channel, "b")
    with pytest.raises(ProtocolError):
        await made.watches.attached(uri)
    assert refusing.asked == 2
    await made.watches.stop()


async def test_a_changeset_the_system_will_not_watch_is_said_once_and_still_ready(tmp_path, caplog):
    folders = FolderWatchers(100, make=Refusing())
    for _ in range(2):
        ready = asyncio.Event()
        with caplog.at_level(logging.INFO, "ahpd.engine"):
            await watching.watch(folders, tmp_path, asyncio.Event(), (), lambda: None, ready)
        assert ready.is_set()
    # Other tests' tasks on the session's loop may log too: this folder's lines are counted.
    [line] = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and str(tmp_path) in r.getMessage()
    ]
    assert "read when a turn ends or a client asks" in line.getMessage()
    assert line.exc_info is None
    assert folders.count == 0


async def test_watches_over_one_folder_share_one_os_watch_until_the_last_goes(tmp_path):
    folders = FolderWatchers(100)
    heard: list[str] = []
    both = asyncio.Event()

    def hearing(name: str) -> Callable[[Any], None]:
        def heard_it(changes: Any) -> None:
            heard.append(name)
            if len(heard) == 2:
                both.set()

        return heard_it

    (tmp_path / "inner").mkdir()
    outer = await folders.listen(tmp_path, True, hearing("outer"))
    inner = await folders.listen(tmp_path / "inner", False, hearing("inner"))
    flat = await folders.listen(tmp_path, False, lambda changes: None)
    assert folders.count == 1 and inner.watcher is outer.watcher is flat.watcher
    (tmp_path / "inner" / "made.txt").write_text("x")
    await asyncio.wait_for(both.wait(), 10)
    assert sorted(heard) == ["inner", "outer"]
    folders.stop_listening(outer)
    folders.stop_listening(flat)
    assert folders.count == 1
    folders.stop_listening(inner)
    assert folders.count == 0
