"""Resource watches over the socket, as many as a guest may open: every watch over one folder
shares one OS watch (one inotify instance, counted in /proc/<server>/fd), and a watch the system
refuses is refused to its subscriber in words, never answered and left saying nothing."""

from __future__ import annotations

import os
import resource
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
WATCHES = 150


@pytest.fixture(scope="module")
def served() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-watched-") as path:
        yield Path(path).resolve()


@pytest.fixture(scope="module")
def server(served: Path) -> Iterator[ServerProcess]:
    # The cap is lifted here: this module counts OS watches, not a person's.
    process = ServerProcess(
        env_extra={"AHPD_PATHS": str(served), "AHPD_WATCHES_PER_PERSON": "0"}
    ).start()
    yield process
    process.close()


@pytest.fixture
def folder(served: Path) -> Path:
    path = served / uuid.uuid4().hex[:8]
    path.mkdir()
    return path


def inotify_instances(pid: int) -> int:
    """How many inotify instances a process holds: its fds that are one."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                count += 1
        except OSError:
            continue  # closed while listed
    return count


def changed(client: Client, channel: str) -> list[str]:
    return [
        item["uri"]
        for envelope in client.actions
        if envelope["channel"] == channel and envelope["action"]["type"] == "resourceWatch/changed"
        for item in envelope["action"]["changes"]["items"]
    ]


async def watch(client: Client, folder: Path, **params: object) -> str:
    answer = await client.request(
        "createResourceWatch", {"channel": ROOT, "uri": folder.as_uri(), **params}
    )
    channel: str = answer["channel"]
    return channel


async def test_a_hundred_and_fifty_watches_over_one_folder_cost_one_os_watch(
    server, connect, folder
):
    client = await connect(server.url)
    await client.initialize()
    before = inotify_instances(server.pid)
    channels = []
    for number in range(WATCHES):
        channel = await watch(
            client, folder, recursive=True, excludes={"items": [f"skip-{number}/**"]}
        )
        await client.request("subscribe", {"channel": channel})
        channels.append(channel)
    assert len(set(channels)) == WATCHES
    assert inotify_instances(server.pid) == before + 1
    # Every one of them is told, the last as the first, each through its own globs.
    (folder / "skip-0").mkdir()
    (folder / "made.txt").write_text("seen by all")
    made = (folder / "made.txt").as_uri()
    for channel in (channels[0], channels[-1]):
        await client.wait_for(lambda channel=channel: made in changed(client, channel))
    (folder / "skip-0" / "hidden.txt").write_text("not for the first")
    hidden = (folder / "skip-0" / "hidden.txt").as_uri()
    await client.wait_for(lambda: hidden in changed(client, channels[-1]))
    await client.settle()
    assert hidden not in changed(client, channels[0])
    # A watch of a folder inside it is served by the same OS watch.
    inner = await watch(client, folder / "skip-0", recursive=True)
    await client.request("subscribe", {"channel": inner})
    assert inotify_instances(server.pid) == before + 1
    assert "Traceback" not in server.log_text()


def lowest_free_fd(pid: int) -> int:
    held = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    return next(n for n in range(len(held) + 1) if n not in held)


async def test_a_watch_the_system_refuses_is_refused_in_words_and_the_next_one_works(
    server, connect, folder
):
    client = await connect(server.url)
    await client.initialize()
    channel = await watch(client, folder, recursive=True)
    # Every descriptor below the limit is taken: inotify_init fails EMFILE in the server, as it
    # fails when the user's inotify instances run out (the system's limits stay as they are).
    limits = resource.prlimit(server.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (lowest_free_fd(server.pid), limits[1]))
    try:
        with pytest.raises(RpcError) as refused:
            await client.request("subscribe", {"channel": channel})
    finally:
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, limits)
    assert refused.value.code == -32603
    assert refused.value.message.startswith(
        f"Cannot watch {folder.as_uri()}: the system refused another file watch ("
    )
    assert "Too many open files" in refused.value.message
    assert "max_user_instances" in refused.value.message
    # Nothing broke: the connection answers, and the same watch subscribed again is watched.
    await client.settle()
    await client.request("subscribe", {"channel": channel})
    (folder / "after.txt").write_text("seen")
    made = (folder / "after.txt").as_uri()
    await client.wait_for(lambda: made in changed(client, channel))
    assert server.wait_output(lambda line: "not watching" in line and str(folder) in line)
    assert "Traceback" not in server.log_text()
