"""An idle chat's agent process is let go after AHPD_SLEEP_AFTER_MINUTES and woken, with its
conversation, by the next turn; one with work in hand is kept. Real agent processes, counted
in /proc, their exits waited for as events."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sessions import ended, new_session, start_streaming, turn
from tests.e2e.test_sessions_acp import heard
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client
from tests.support.processes import agents_of, exited
from tests.support.server import ServerProcess

#: 1.2 s: long enough for a turn, short enough to wait for.
SLEEP_AFTER_MINUTES = "0.02"


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-sleep-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent(AHPD_SLEEP_AFTER_MINUTES=SLEEP_AFTER_MINUTES) as process:
        yield process


async def worked_and_stopped(server: ServerProcess, client: Client, chat: str) -> int:
    """Run a turn in the chat, stopped while it streams: the agent process that ran it."""
    before = agents_of(server)
    action = await start_streaming(client, chat, "slow")
    (pid,) = agents_of(server) - before
    stop = {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 5}
    await client.dispatch_and_wait(chat, stop)
    return pid


async def test_an_idle_agent_is_let_go_and_the_next_turn_loads_its_session_again(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    first = await worked_and_stopped(server, client, chat)
    await exited(first)
    # Woken by session/load: the same agent session, which has its history and is handed
    # nothing again (a new session would be handed the earlier turns in its first prompt).
    assert await heard(client, chat) == [["slow"], ["heard"]]
    assert first not in agents_of(server)
    await client.assert_conforms(chat)


async def test_a_chat_waiting_for_a_persons_answer_keeps_its_agent(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, asking = await new_session(client, workdir, provider="fake")
    _, other = await new_session(client, workdir, provider="fake")
    before = agents_of(server)
    question = turn("write kept.txt written after a wait")
    await client.dispatch(asking, question)
    ready = await client.wait_action(
        lambda e: (
            e["channel"] == asking
            and e["action"]["type"] == "chat/toolCallReady"
            and e["action"]["turnId"] == question["turnId"]
            and "confirmed" not in e["action"]
        ),
        timeout=30,
    )
    (asker,) = agents_of(server) - before
    # The other chat's agent going is the clock: a whole sleep has passed since it rested,
    # which was after the question was asked.
    await exited(await worked_and_stopped(server, client, other))
    assert asker in agents_of(server)
    await client.dispatch_and_wait(
        asking,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": question["turnId"],
            "toolCallId": ready["action"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": next(
                o["id"] for o in ready["action"]["options"] if o["kind"] == "approve"
            ),
        },
    )
    end = await client.wait_action(ended(asking, question["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert (workdir / "kept.txt").read_text() == "written after a wait"
    await client.assert_conforms(asking)


async def test_slash_commands_are_offered_while_the_agent_is_let_go(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    await exited(await worked_and_stopped(server, client, chat))
    items = (
        await client.request(
            "completions", {"channel": chat, "kind": "userMessage", "text": "/re", "offset": 3}
        )
    )["items"]
    assert [i["insertText"] for i in items] == ["/recall ", "/read "]
