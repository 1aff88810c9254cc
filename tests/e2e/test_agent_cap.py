"""AHPD_AGENTS_PER_PERSON: at the cap a person's least recently used idle agent is let go for
the next, and with all of theirs at work the next is refused, in words naming the cap and the
setting, before anything is said or made; another person is not held to their count."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_agent_residency import finished, stop, streaming
from tests.e2e.test_grants import cli
from tests.e2e.test_sessions import ended, message, new_session, run_turn, turn
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client, RpcError
from tests.support.processes import agents_of, exited
from tests.support.server import ServerProcess

CAP_WORDS = "user:bea already has 2 agents at work, the most one person may run at once"


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-cap-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    settings = {
        "AHPD_AGENTS_PER_PERSON": "2",
        "AHPD_SLEEP_AFTER_MINUTES": "0",
        "AHPD_SESSION_RESIDENCY_LIMIT": "0",
    }
    with server_with_acp_agent(**settings) as process:
        yield process


@pytest.fixture(scope="module")
def bea(server) -> str:
    cli(server, "user", "add", "bea", "--role", "member")
    token: str = cli(server, "user", "token", "bea")["token"]
    return token


async def chat_beside(client: Client, session: str) -> str:
    chat = f"ahp-chat:/{uuid.uuid4()}"
    await client.request("createChat", {"channel": session, "chat": chat})
    await client.request("subscribe", {"channel": chat})
    return chat


async def test_at_the_cap_an_idle_agent_of_the_persons_goes_for_the_next(
    server, connect, workdir, bea
):
    client = await connect(server.url, token=bea)
    await client.initialize()
    session, first = await new_session(client, workdir, provider="fake")
    second = await chat_beside(client, session)
    third = await chat_beside(client, session)
    pids = [await finished(server, client, chat) for chat in (first, second)]
    # The first chat is used again: the second's agent is the least recently used.
    assert (await run_turn(client, first, "again"))["action"]["type"] == "chat/turnComplete"
    assert (await run_turn(client, third, "third"))["action"]["type"] == "chat/turnComplete"
    await exited(pids[1])
    assert pids[0] in agents_of(server)
    await client.request("disposeSession", {"channel": session})


async def test_with_every_agent_at_work_the_next_is_refused_naming_the_setting(
    server, connect, workdir, bea
):
    client = await connect(server.url, token=bea)
    await client.initialize()
    session, first = await new_session(client, workdir, provider="fake")
    second = await chat_beside(client, session)
    third = await chat_beside(client, session)
    running = [await streaming(server, client, chat) for chat in (first, second)]
    at_work = agents_of(server)

    refused = await client.dispatch_and_wait(third, turn("one too many"))
    assert refused["rejectionReason"].startswith(CAP_WORDS)
    assert "(AHPD_AGENTS_PER_PERSON=2)" in refused["rejectionReason"]
    queued = {
        "type": "chat/pendingMessageSet",
        "kind": "queued",
        "id": "q1",
        "message": message("queued too many"),
    }
    assert (await client.dispatch_and_wait(third, queued))["rejectionReason"].startswith(CAP_WORDS)
    made = f"ahp-chat:/{uuid.uuid4()}"
    with pytest.raises(RpcError) as error:
        await client.request(
            "createChat",
            {"channel": session, "chat": made, "initialMessage": message("and a chat")},
        )
    assert error.value.code == -32009
    assert error.value.message.startswith(CAP_WORDS)
    assert "AHPD_AGENTS_PER_PERSON" in error.value.message
    state = (await client.request("subscribe", {"channel": session}))["snapshot"]["state"]
    assert made not in [c["resource"] for c in state["chats"]]
    assert agents_of(server) == at_work
    await client.assert_conforms(third)

    # Another person is not held to bea's count.
    root = await connect(server.url)
    await root.initialize()
    _, theirs = await new_session(root, workdir, provider="fake")
    assert (await run_turn(root, theirs, "mine"))["action"]["type"] == "chat/turnComplete"

    # One of bea's turns ends: its agent, idle now, goes for the next.
    (action, pid) = running[0]
    stopped = (await stop(client, first, action))["serverSeq"]
    # Once the agent has let the stopped turn go, the turn's end is kept and the chat is said
    # unread: from then on the chat is idle.
    await client.wait_action(
        lambda e: (
            e["serverSeq"] > stopped
            and e["channel"] == first
            and e["action"]["type"] == "chat/isReadChanged"
        )
    )
    taken = turn("room now")
    assert "rejectionReason" not in await client.dispatch_and_wait(third, taken)
    end = await client.wait_action(ended(third, taken["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    await exited(pid)
    await stop(client, second, running[1][0])
    for chat in (first, second, third):
        await client.assert_conforms(chat)
