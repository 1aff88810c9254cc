"""Past AHPD_SESSION_RESIDENCY_LIMIT sessions running agents, the least recently used session
that is idle in every chat has its agents let go first, and one at work never is. Real agent
processes, counted in /proc, their exits waited for as events."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sessions import new_session, run_turn, start_streaming
from tests.e2e.test_sessions_acp import heard
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client
from tests.support.processes import agents_of, exited
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-residency-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    settings = {
        "AHPD_SESSION_RESIDENCY_LIMIT": "2",
        "AHPD_SLEEP_AFTER_MINUTES": "0",
        "AHPD_AGENTS_PER_PERSON": "0",
    }
    with server_with_acp_agent(**settings) as process:
        yield process


async def streaming(server: ServerProcess, client: Client, chat: str) -> tuple[dict, int]:
    """A turn that streams until it is stopped, and the agent process it started."""
    before = agents_of(server)
    action = await start_streaming(client, chat, "slow")
    (pid,) = agents_of(server) - before
    return action, pid


async def finished(server: ServerProcess, client: Client, chat: str) -> int:
    """A turn run to its end, and the agent process it started (none is let go on time)."""
    before = agents_of(server)
    assert (await run_turn(client, chat, "hello"))["action"]["type"] == "chat/turnComplete"
    (pid,) = agents_of(server) - before
    return pid


async def stop(client: Client, chat: str, action: dict) -> dict:
    """Stop the turn `action` started; the stop's envelope."""
    stopped = {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 5}
    return await client.dispatch_and_wait(chat, stopped)


async def test_the_least_recently_used_idle_session_is_let_go_first(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    chats = [(await new_session(client, workdir, provider="fake"))[1] for _ in range(3)]
    pids = [await finished(server, client, chat) for chat in chats[:2]]
    # The first session is used again: the second is now the least recently used.
    assert (await run_turn(client, chats[0], "again"))["action"]["type"] == "chat/turnComplete"
    before = agents_of(server)
    assert (await run_turn(client, chats[2], "third"))["action"]["type"] == "chat/turnComplete"
    await exited(pids[1])
    assert pids[0] in agents_of(server)
    assert len(agents_of(server) - before) == 1
    # The session let go is woken transparently by its next turn, with its own agent session;
    # the first is now the least recently used, and goes.
    assert await heard(client, chats[1]) == [["hello"], ["heard"]]
    await exited(pids[0])
    await client.assert_conforms(chats[1])


async def test_sessions_at_work_are_never_let_go_for_the_limit(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    chats = [(await new_session(client, workdir, provider="fake"))[1] for _ in range(3)]
    running = [await streaming(server, client, chat) for chat in chats[:2]]
    assert (await run_turn(client, chats[2], "over"))["action"]["type"] == "chat/turnComplete"
    alive = agents_of(server)
    assert all(pid in alive for _, pid in running)
    for chat, (action, _) in zip(chats, running, strict=False):
        await stop(client, chat, action)
    for chat in chats:
        await client.assert_conforms(chat)
